/**
 * The order of the checks every call passes (prepareCall): caller kind, then access to the
 * workspace the request names (membership, then the role's permission), then validation. A
 * caller outside the workspace hears `not_found` whatever else is wrong with the request, never a
 * field violation; only a workspace id that is missing or not a UUID is reported by validation.
 */
import { TargetService, TeamService } from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberWithRole, type Owner, serviceAccountCaller } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let bob: Owner;
beforeAll(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  bob = await t.owner();
});
afterAll(() => t.platform.close());

/** A target request wrong in every field but the workspace id. */
const badTarget = (workspaceId: string) => ({ workspaceId, name: "", description: "x".repeat(5000) });

describe("membership before validation", () => {
  it("answers a user outside the workspace not_found, with no field violations", async () => {
    const error = await expectCode(
      t.call(bob.caller, TargetService.method.createTarget, badTarget(ada.workspaceId)),
      "not_found",
    );
    expect(error.reason).toBe("WORKSPACE_NOT_FOUND");
    expect(error.violations).toEqual([]);
    // The same answer as for a workspace that does not exist.
    const none = await expectCode(
      t.call(bob.caller, TargetService.method.createTarget, badTarget(crypto.randomUUID())),
      "not_found",
    );
    expect(none.reason).toBe("WORKSPACE_NOT_FOUND");
  });

  it("answers another workspace's service account not_found too, and a member without the permission permission_denied", async () => {
    const robot = await serviceAccountCaller(t, bob, "editor");
    const error = await expectCode(
      t.call(robot, TeamService.method.createTeam, { workspaceId: ada.workspaceId, name: "" }),
      "not_found",
    );
    expect(error.violations).toEqual([]);
    const viewer = await memberWithRole(t, ada.workspaceId, "viewer");
    const denied = await expectCode(
      t.call(viewer.caller, TargetService.method.createTarget, badTarget(ada.workspaceId)),
      "permission_denied",
    );
    expect(denied.violations).toEqual([]);
  });

  it("validates the request of a member allowed to make it, and names every bad field", async () => {
    const error = await expectCode(
      t.call(ada.caller, TargetService.method.createTarget, badTarget(ada.workspaceId.toUpperCase())),
      "invalid_argument",
    );
    expect([...new Set(error.violations.map((v) => v.field))].sort()).toEqual(["description", "name"]);
  });

  it("reports a workspace id that is not a UUID, or none, by validation", async () => {
    const malformed = await expectCode(
      t.call(bob.caller, TargetService.method.createTarget, badTarget("not-a-uuid")),
      "invalid_argument",
    );
    expect(malformed.violations.map((v) => v.field)).toContain("workspaceId");
    const missing = await expectCode(
      t.call(bob.caller, TargetService.method.createTarget, { name: "web" }),
      "invalid_argument",
    );
    expect(missing.violations).toEqual([{ field: "workspaceId", description: "is required" }]);
  });

  it("property: whatever the rest of the request, an outsider hears only not_found", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ name: fc.string({ maxLength: 300 }), description: fc.string({ maxLength: 1200 }) }),
        async (fields) => {
          const error = await expectCode(
            t.call(bob.caller, TargetService.method.createTarget, {
              ...fields,
              workspaceId: ada.workspaceId,
            }),
            "not_found",
          );
          expect(error.violations).toEqual([]);
        },
      ),
      { numRuns: 50 },
    );
  });
});

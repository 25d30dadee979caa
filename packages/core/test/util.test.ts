import { UtilService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { permissions, roles } from "../src/access/permissions.js";
import { allOperations, streamingOperations } from "../src/platform/registry.js";
import { apiVersion } from "../src/version.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await createTestPlatform();
});
afterEach(() => t.platform.close());

describe("UtilService", () => {
  it("GetVersion answers anyone with the release and the API version", async () => {
    const res = await t.call({ kind: "anonymous" }, UtilService.method.getVersion, {});
    expect(res.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(res.apiVersion).toBe(apiVersion);
  });

  it("ListRoles returns the permission matrix the code enforces", async () => {
    const { caller } = await t.signUp("ada");
    const { roles: listed } = await t.call(caller, UtilService.method.listRoles, {});
    expect(listed.map((r) => r.name)).toEqual(["owner", "admin", "editor", "viewer"]);
    const viewer = listed.find((r) => r.name === "viewer")!;
    // Viewers read, and ask for just-in-time access (deciding a request is up to its grant's policy).
    expect(
      viewer.permissions.every(
        (p) => p.endsWith(".read") || p === "access_requests.create" || p === "access_requests.decide",
      ),
    ).toBe(true);
    expect(viewer.assignableToServiceAccounts).toBe(true);
    expect(listed.find((r) => r.name === "owner")?.permissions).toEqual(
      expect.arrayContaining([...permissions]),
    );
    await expectCode(t.call({ kind: "anonymous" }, UtilService.method.listRoles, {}), "unauthenticated");
  });
});

describe("conditional permissions", () => {
  it("each adds to its operation's permission: some role holding that one lacks it", () => {
    const declared = [...allOperations, ...streamingOperations].flatMap((op) =>
      op.access.kind === "workspace"
        ? (op.access.conditions ?? []).map((c) => [op.access, c.permission] as const)
        : [],
    );
    expect(declared.length).toBeGreaterThanOrEqual(5);
    for (const [access, extra] of declared) {
      if (access.kind !== "workspace") continue;
      const holders = roles.filter((r) => r.permissions.includes(access.permission));
      expect(holders.some((r) => !r.permissions.includes(extra))).toBe(true);
    }
  });
});

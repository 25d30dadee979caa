/**
 * A write that breaks a uniqueness rule no operation checked for (an id drawn twice, a race the
 * operation did not foresee): the caller gets `already_exists` with a message in the API's words,
 * never the database's table, column or index names.
 */
import { WorkspaceService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemRandom } from "../src/runtime.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
/** When set, the next record id drawn. */
let nextId: string | undefined;
beforeEach(async () => {
  t = await createTestPlatform({
    random: {
      bytes: systemRandom.bytes,
      uuid: () => nextId ?? systemRandom.uuid(),
    },
  });
});
afterEach(() => t.platform.close());

describe("a broken uniqueness rule", () => {
  it("answers already_exists without the schema's names", async () => {
    const ada = await t.owner();
    nextId = ada.workspaceId;
    const error = await expectCode(
      t.call(ada.caller, WorkspaceService.method.createWorkspace, { name: "Second" }),
      "already_exists",
    );
    nextId = undefined;
    expect(error.message).toBe(
      "this resource already exists (a concurrent request may have created it): read it, or retry",
    );
    expect(error.message).not.toMatch(/workspaces|_id|\bid\b|_key|_pkey/);
    // The log keeps what happened.
    expect(String((error.cause as Error).message)).toContain("workspaces.id");
  });
});

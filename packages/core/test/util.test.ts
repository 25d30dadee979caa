import { readFile, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { permissions, roles } from "../src/access/permissions.js";
import { UtilService } from "../src/gen/platform/v1/util_pb.js";
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
    expect(viewer.permissions.every((p) => p.endsWith(".read"))).toBe(true);
    expect(viewer.assignableToServiceAccounts).toBe(true);
    expect(listed.find((r) => r.name === "owner")?.permissions).toEqual(
      expect.arrayContaining([...permissions]),
    );
    await expectCode(t.call({ kind: "anonymous" }, UtilService.method.listRoles, {}), "unauthenticated");
  });
});

/** docs/permissions.md is written from the table; regenerate with WAP_UPDATE_DOCS=1. */
describe("docs/permissions.md", () => {
  it("matches the permission table in access/permissions.ts", async () => {
    const path = new URL("../../../docs/permissions.md", import.meta.url);
    const header = `| permission | ${roles.map((r) => r.name).join(" | ")} |`;
    const rule = `|---|${roles.map(() => ":-:").join("|")}|`;
    const rows = permissions.map(
      (p) => `| \`${p}\` | ${roles.map((r) => (r.permissions.includes(p) ? "yes" : "")).join(" | ")} |`,
    );
    const table = [header, rule, ...rows].join("\n");
    const roleList = roles
      .map(
        (r) =>
          `- **${r.name}**: ${r.description}${r.assignableToServiceAccounts ? " (also for service accounts)" : ""}`,
      )
      .join("\n");
    const expected = `# Roles and permissions

Generated from \`packages/core/src/access/permissions.ts\`, the one table the server enforces and
\`UtilService.ListRoles\` returns. A test fails when the two differ.

Every workspace-scoped operation names one permission; a caller needs a role that holds it in
that workspace. A caller who is not a member of a workspace is answered \`not_found\` whether or
not the workspace exists; a member whose role lacks the permission gets \`permission_denied\`.

${roleList}

Service accounts hold \`viewer\` (read-only) or \`editor\` (read-write); only people can be
owners or admins.

${table}
`;
    if (process.env.WAP_UPDATE_DOCS) await writeFile(path, expected);
    expect(await readFile(path, "utf8")).toBe(expected);
  });
});

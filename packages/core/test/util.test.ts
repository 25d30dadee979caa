import { readFile, writeFile } from "node:fs/promises";
import { UtilService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { permissions, roles } from "../src/access/permissions.js";
import type { Access } from "../src/operations/operation.js";
import { allOperations, bidiStreamingOperations, streamingOperations } from "../src/platform/registry.js";
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
    const describeAccess = (access: Access) => {
      if (access.kind === "public") return ["anyone", ""];
      if (access.kind === "signed_daemon") return ["daemon (signed request)", "(none: its own workspace)"];
      const callers = (
        access.kind === "caller" ? access.callers : (access.callers ?? ["user", "service_account"])
      )
        .map((c) => c.replace("_", " "))
        .join(", ");
      const conditions = (access.kind === "workspace" ? (access.conditions ?? []) : []).map(
        (c) => `; \`${c.permission}\` ${c.when}`,
      );
      // A daemon acts only in the workspace it is enrolled in.
      const daemonOnly = access.kind === "caller" && access.callers.every((c) => c === "daemon");
      return [
        callers,
        access.kind === "workspace"
          ? `\`${access.permission}\`${conditions.join("")}`
          : daemonOnly
            ? "(none: its own workspace)"
            : "(none: not workspace-scoped)",
      ];
    };
    const operationTable = [
      "| RPC | callers | permission |",
      "|---|---|---|",
      ...[...allOperations, ...streamingOperations, ...bidiStreamingOperations]
        .map((op) => [`${op.method.parent.name}.${op.method.name}`, ...describeAccess(op.access)] as const)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([rpc, callers, permission]) => `| ${rpc} | ${callers} | ${permission} |`),
    ].join("\n");
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
that workspace. Some also name a permission needed only in some cases (after a semicolon: a host
certificate, another subject's session); without it those cases are refused with
\`permission_denied\`, or, for recordings, only the caller's own are shown. A caller who is not a member of a workspace is answered \`not_found\` whether or
not the workspace exists; a member whose role lacks the permission gets \`permission_denied\`.

${roleList}

Service accounts hold \`viewer\` (read-only) or \`editor\` (read-write); only people can be
owners or admins.

${table}

## Rules beyond the table

- Only an owner may grant the owner role, change an owner's role or remove an owner; admins
  change the roles of everyone else and remove them.
- A workspace always keeps an owner: demoting or removing the last one is \`failed_precondition\`,
  also when such requests race (they are serialised per workspace).
- \`UpdateWorkspaceOwner\` makes the new owner (an existing member) an owner and the caller an admin.
- The invite link grants \`viewer\`; an admin raises the role afterwards. It admits anyone holding
  it until it expires, is refreshed or is revoked; accepting never changes a member's role.
- Every member and service account may ask \`GetSubjectAccess\` what a subject of the workspace
  reaches (the CLI asks about itself in every workspace).

## Who may call each RPC

${operationTable}
`;
    if (process.env.WAP_UPDATE_DOCS) await writeFile(path, expected);
    expect(await readFile(path, "utf8")).toBe(expected);
  });
});

/**
 * docs/permissions.md: the role table of access/permissions.ts and the access every RPC of the
 * registry declares.
 *
 * @module
 */
import { permissions, roles } from "../access/permissions.js";
import type { Access } from "../operations/operation.js";
import { allOperations, bidiStreamingOperations, streamingOperations } from "./registry.js";

export function renderPermissionsDoc(): string {
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
  return `# Roles and permissions

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
}

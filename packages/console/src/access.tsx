/**
 * What the signed-in person may do in a workspace, read from the server: their role from
 * GetWorkspaceMember and that role's permissions from ListRoles, the table the server enforces.
 * The console holds no copy of it; it only names the permission an action needs (its test checks
 * every name it uses against the core's list).
 */

/** A permission's name as the server's role table spells it ("members.manage"). */
type Permission = string;

import { useQuery } from "@connectrpc/connect-query";
import { UtilService, WorkspaceService } from "@wap/api";
import type { ReactNode } from "react";
import { useMe } from "./session";

export interface Access {
  /** False until the role and the table have arrived: show nothing that needs a permission. */
  readonly ready: boolean;
  readonly role: string;
  can(permission: Permission): boolean;
  /** Why the caller cannot: who can, and what the caller is. */
  reason(permission: Permission): string;
}

const plural = (role: string) => `${role}s`;

function listOf(words: string[]): string {
  if (words.length <= 1) return words.join("");
  return `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

export function useAccess(ws: string): Access {
  const me = useMe();
  const userId = me.user?.id ?? "";
  const member = useQuery(
    WorkspaceService.method.getWorkspaceMember,
    { workspaceId: ws, userId },
    { enabled: userId !== "" && ws !== "", staleTime: 30_000 },
  );
  const roles = useQuery(UtilService.method.listRoles, {}, { staleTime: 300_000 });
  const role = member.data?.member?.roleName ?? "";
  const table = roles.data?.roles ?? [];
  const mine = new Set(table.find((r) => r.name === role)?.permissions ?? []);
  return {
    ready: role !== "" && table.length > 0,
    role,
    can: (permission) => mine.has(permission),
    reason: (permission) => {
      const holders = table.filter((r) => r.permissions.includes(permission)).map((r) => plural(r.name));
      const who = holders.length === 1 ? `Only ${holders[0]}` : listOf(holders);
      return `${who.charAt(0).toUpperCase()}${who.slice(1)} can do this; your role here is ${role}.`;
    },
  };
}

/**
 * Shows `children` when the caller's role holds `need`; otherwise says, once, what the role
 * cannot do and who can (`doing` completes "You cannot …").
 */
export function Can({
  access,
  need,
  doing,
  children,
  quiet,
}: {
  access: Access;
  need: Permission;
  doing: string;
  children: ReactNode;
  /** Hide without a word (for a control whose section already said why). */
  quiet?: boolean;
}) {
  if (!access.ready) return null;
  if (access.can(need)) return <>{children}</>;
  if (quiet) return null;
  return (
    <p className="muted not-allowed">
      You cannot {doing}. {access.reason(need)}
    </p>
  );
}

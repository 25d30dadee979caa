/**
 * Permissions an operation needs only in some cases (a host certificate, another member's
 * session). The operation declares them in its `access`, so the generated docs say what the
 * check does; its handler checks them with `holds`, as it alone knows the case.
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";
import { type Permission, roleAllows } from "./permissions.js";

export interface ConditionalPermission {
  readonly permission: Permission;
  /** The case it is needed in, as the docs say it ("for host certificates"). */
  readonly when: string;
}

/** Whether a caller with `role` in the workspace (null: a daemon) holds `condition`'s permission. */
export function holds(role: WorkspaceRole | null, condition: ConditionalPermission): boolean {
  return role !== null && roleAllows(role, condition.permission);
}

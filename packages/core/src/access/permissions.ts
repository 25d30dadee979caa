/**
 * The permission matrix: which workspace role may do what. The one table the code enforces
 * (and ListRoles returns); docs/permissions.md is written from it.
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";

/** Every permission an operation can require. `*.read` permissions never change anything. */
export const permissions = [
  "workspace.read",
  "workspace.update",
  "workspace.delete",
  "workspace.transfer",
  "members.read",
  "members.manage",
  "invitations.manage",
  "domains.read",
  "domains.manage",
  "teams.read",
  "teams.manage",
  "service_accounts.read",
  "service_accounts.manage",
  "certificate_authorities.read",
  "certificate_authorities.manage",
  "certificates.sign",
  "certificates.read",
  "certificates.revoke",
  "targets.read",
  "targets.manage",
  "principals.read",
  "principals.manage",
  "daemons.read",
  "daemons.manage",
  "sessions.read",
  "sessions.manage",
  "recordings.read",
  "recordings.delete",
  "sso.read",
  "sso.manage",
  "audit.read",
  "billing.read",
  "billing.manage",
  "access_requests.read",
  "access_requests.create",
  "access_requests.decide",
  "access_requests.manage",
  "webhooks.manage",
] as const;

export type Permission = (typeof permissions)[number];

const readOnly: Permission[] = [
  ...permissions.filter(
    // What a terminal printed may hold secrets: recordings are for administrators (and, for their
    // own sessions, the subject who ran them; see recordings/operations.ts).
    // The issuance ledger says who holds which certificate: like the audit log, not for viewers.
    (p) =>
      p.endsWith(".read") &&
      !["sso.read", "audit.read", "billing.read", "recordings.read", "certificates.read"].includes(p),
  ),
  // Every member may ask for just-in-time access and decide requests: who may approve which
  // request is the grant's approval policy, checked by the operation.
  "access_requests.create",
  "access_requests.decide",
];

const editor: Permission[] = [
  ...readOnly,
  "teams.manage",
  "certificate_authorities.manage",
  "certificates.sign",
  "certificates.read",
  "certificates.revoke",
  "targets.manage",
  "principals.manage",
  "daemons.manage",
  "sessions.manage",
];

const admin: Permission[] = [
  ...editor,
  "workspace.update",
  "members.manage",
  "invitations.manage",
  "domains.manage",
  "service_accounts.manage",
  "sso.read",
  "sso.manage",
  "audit.read",
  "billing.read",
  "recordings.read",
  "recordings.delete",
  "access_requests.manage",
  // Webhook endpoints receive the whole audit log: for those who may read it.
  "webhooks.manage",
];

/** A role as ListRoles describes it. */
export interface RoleDefinition {
  readonly name: WorkspaceRole;
  readonly description: string;
  readonly permissions: readonly Permission[];
  readonly assignableToUsers: boolean;
  readonly assignableToServiceAccounts: boolean;
}

/** The four workspace roles, strongest first. */
export const roles: readonly RoleDefinition[] = [
  {
    name: "owner",
    description: "Full control, including deleting the workspace, transferring ownership and billing.",
    permissions: [...admin, "workspace.delete", "workspace.transfer", "billing.manage"],
    assignableToUsers: true,
    assignableToServiceAccounts: false,
  },
  {
    name: "admin",
    description: "Manages members, service accounts, SSO and settings, and everything an editor can.",
    permissions: admin,
    assignableToUsers: true,
    assignableToServiceAccounts: false,
  },
  {
    name: "editor",
    description: "Reads and changes certificate authorities, targets, access grants, teams and daemons.",
    permissions: editor,
    assignableToUsers: true,
    assignableToServiceAccounts: true,
  },
  {
    name: "viewer",
    description: "Reads the workspace's resources and asks for just-in-time access; changes nothing else.",
    permissions: readOnly,
    assignableToUsers: true,
    assignableToServiceAccounts: true,
  },
];

const grants = new Map(roles.map((role) => [role.name, new Set<Permission>(role.permissions)]));

/** True when `role` holds `permission`. */
export function roleAllows(role: WorkspaceRole, permission: Permission): boolean {
  return grants.get(role)?.has(permission) ?? false;
}

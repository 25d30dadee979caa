/**
 * Row <-> record conversions of the workspace-access tables, on the scalar rules of `mapping.ts`.
 *
 * @module
 */
import type {
  MemberProfileRecord,
  PrincipalGrantsRecord,
  TeamRecord,
  WorkspaceDomainRecord,
  WorkspaceInviteRecord,
  WorkspaceSettingsRecord,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import type { UsersTable, WorkspaceMembersTable } from "../schema.js";
import type {
  PrincipalSubjectsTable,
  PrincipalsTable,
  TeamsTable,
  WorkspaceDomainsTable,
  WorkspaceInvitesTable,
  WorkspaceSettingsTable,
} from "../schema-workspace-access.js";
import {
  fold,
  fromDate,
  fromDateOrNull,
  fromFlag,
  rowToMember,
  toDate,
  toDateOrNull,
  toJson,
  toNumber,
  toStringArray,
} from "./mapping.js";

export function settingsToRow(s: WorkspaceSettingsRecord): Insertable<WorkspaceSettingsTable> {
  return {
    workspace_id: s.workspaceId,
    enroll_expiry_seconds: s.enrollExpirySeconds,
    invite_expiry_seconds: s.inviteExpirySeconds,
    updated_at: fromDate(s.updatedAt),
  };
}

export function rowToSettings(r: Selectable<WorkspaceSettingsTable>): WorkspaceSettingsRecord {
  return {
    workspaceId: r.workspace_id,
    enrollExpirySeconds: toNumber(r.enroll_expiry_seconds),
    inviteExpirySeconds: toNumber(r.invite_expiry_seconds),
    updatedAt: toDate(r.updated_at),
  };
}

export function inviteToRow(i: WorkspaceInviteRecord): Insertable<WorkspaceInvitesTable> {
  return {
    workspace_id: i.workspaceId,
    token_hash: i.tokenHash,
    role: i.role,
    created_by: i.createdBy,
    created_at: fromDate(i.createdAt),
    expires_at: fromDate(i.expiresAt),
  };
}

export function rowToInvite(r: Selectable<WorkspaceInvitesTable>): WorkspaceInviteRecord {
  return {
    workspaceId: r.workspace_id,
    tokenHash: r.token_hash,
    role: r.role as WorkspaceInviteRecord["role"],
    createdBy: r.created_by,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

export function domainToRow(d: WorkspaceDomainRecord): Insertable<WorkspaceDomainsTable> {
  return {
    workspace_id: d.workspaceId,
    domain: d.domain,
    verification_token: d.verificationToken,
    verified_at: fromDateOrNull(d.verifiedAt),
    created_at: fromDate(d.createdAt),
    updated_at: fromDate(d.updatedAt),
  };
}

export function rowToDomain(r: Selectable<WorkspaceDomainsTable>): WorkspaceDomainRecord {
  return {
    workspaceId: r.workspace_id,
    domain: r.domain,
    verificationToken: r.verification_token,
    verifiedAt: toDateOrNull(r.verified_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function teamToRow(t: TeamRecord): Insertable<TeamsTable> {
  return {
    id: t.id,
    workspace_id: t.workspaceId,
    name: t.name,
    name_folded: fold(t.name),
    description: t.description,
    description_folded: fold(t.description),
    tags: toJson(t.tags),
    created_at: fromDate(t.createdAt),
    updated_at: fromDate(t.updatedAt),
  };
}

export function rowToTeam(r: Selectable<TeamsTable>): TeamRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    tags: toStringArray(r.tags),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

/** A membership row joined with the user's public columns (prefixed `u_`). */
export type MemberProfileRow = Selectable<WorkspaceMembersTable> & {
  u_name: Selectable<UsersTable>["name"];
  u_username: Selectable<UsersTable>["username"];
  u_email: Selectable<UsersTable>["email"];
  u_email_verified: Selectable<UsersTable>["email_verified"];
  u_picture: Selectable<UsersTable>["picture"];
};

export function rowToMemberProfile(r: MemberProfileRow): MemberProfileRecord {
  return {
    member: rowToMember(r),
    user: {
      id: r.user_id,
      name: r.u_name,
      username: r.u_username,
      email: r.u_email,
      emailVerified: fromFlag(r.u_email_verified),
      picture: r.u_picture,
    },
  };
}

/** A principal and the grant rows that name it, in grant order. */
export function rowsToPrincipal(
  r: Selectable<PrincipalsTable>,
  grants: readonly Selectable<PrincipalSubjectsTable>[],
): PrincipalGrantsRecord {
  const userIds: string[] = [];
  const teamIds: string[] = [];
  const serviceAccountIds: string[] = [];
  for (const g of grants) {
    if (g.user_id !== null) userIds.push(g.user_id);
    else if (g.team_id !== null) teamIds.push(g.team_id);
    else if (g.service_account_id !== null) serviceAccountIds.push(g.service_account_id);
  }
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    targetId: r.target_id,
    username: r.username,
    createdAt: toDate(r.created_at),
    userIds,
    teamIds,
    serviceAccountIds,
  };
}

/**
 * The workspace-access tables (migration 004) as Kysely sees them; part of {@link Database}.
 *
 * @module
 */
import type { BigIntColumn, JsonColumn, MillisColumn, NullableMillisColumn } from "./schema.js";

export interface WorkspaceSettingsTable {
  workspace_id: string;
  enroll_expiry_seconds: BigIntColumn;
  invite_expiry_seconds: BigIntColumn;
  updated_at: MillisColumn;
}

export interface WorkspaceInvitesTable {
  workspace_id: string;
  token_hash: string;
  role: string;
  created_by: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
}

export interface WorkspaceDomainsTable {
  workspace_id: string;
  domain: string;
  verification_token: string;
  verified_at: NullableMillisColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface TeamsTable {
  id: string;
  workspace_id: string;
  name: string;
  name_folded: string;
  description: string;
  description_folded: string;
  tags: JsonColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface TeamMembersTable {
  workspace_id: string;
  team_id: string;
  user_id: string;
  created_at: MillisColumn;
}

export interface PrincipalsTable {
  id: string;
  workspace_id: string;
  target_id: string;
  username: string;
  created_at: MillisColumn;
}

export interface PrincipalSubjectsTable {
  workspace_id: string;
  principal_id: string;
  subject_type: string;
  user_id: string | null;
  team_id: string | null;
  service_account_id: string | null;
  created_at: MillisColumn;
  grant_kind: string;
  valid_until: NullableMillisColumn;
  /** On-request grants: their approval policy as JSON. */
  approval_policy: string | null;
  /** The grant's limits as JSON; null: none. */
  limits: string | null;
}

export interface AccessRequestsTable {
  id: string;
  workspace_id: string;
  target_id: string;
  login: string;
  requester_id: string;
  reason: string;
  state: string;
  /** The approval policy, JSON. */
  policy: string;
  /** The transitions, JSON, oldest first. */
  events: string;
  duration_seconds: BigIntColumn;
  created_at: MillisColumn;
  decide_by: MillisColumn;
  approved_at: NullableMillisColumn;
  ends_at: NullableMillisColumn;
  version: number;
}

export interface WorkspaceAccessTables {
  workspace_settings: WorkspaceSettingsTable;
  workspace_invites: WorkspaceInvitesTable;
  workspace_domains: WorkspaceDomainsTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  principals: PrincipalsTable;
  principal_subjects: PrincipalSubjectsTable;
  access_requests: AccessRequestsTable;
}

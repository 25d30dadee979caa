/**
 * The workspace invite link (`workspace_invites`).
 *
 * @module
 */
import type { WorkspaceInviteRecord, WorkspaceInviteRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, toDate } from "../lib/mapping.js";
import { workspaceTokenQueries } from "../lib/workspace-token.js";
import type { QueryRunner } from "../repositories.js";
import type { WorkspaceInvitesTable } from "../schema-workspace-access.js";

function inviteToRow(i: WorkspaceInviteRecord): Insertable<WorkspaceInvitesTable> {
  return {
    workspace_id: i.workspaceId,
    token_hash: i.tokenHash,
    role: i.role,
    created_by: i.createdBy,
    created_at: fromDate(i.createdAt),
    expires_at: fromDate(i.expiresAt),
  };
}

function rowToInvite(r: Selectable<WorkspaceInvitesTable>): WorkspaceInviteRecord {
  return {
    workspaceId: r.workspace_id,
    tokenHash: r.token_hash,
    role: r.role as WorkspaceInviteRecord["role"],
    createdBy: r.created_by,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

export function createWorkspaceInviteRepository(run: QueryRunner): WorkspaceInviteRepository {
  return workspaceTokenQueries(run, "workspace_invites", inviteToRow, rowToInvite);
}

/**
 * The workspace enrolment token (`daemon_enroll_tokens`).
 *
 * @module
 */
import type { EnrollTokenRecord, EnrollTokenRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, toDate } from "../lib/mapping.js";
import { workspaceTokenQueries } from "../lib/workspace-token.js";
import type { QueryRunner } from "../repositories.js";
import type { DaemonEnrollTokensTable } from "../schema-daemons.js";

function tokenToRow(t: EnrollTokenRecord): Insertable<DaemonEnrollTokensTable> {
  return {
    workspace_id: t.workspaceId,
    token_hash: t.tokenHash,
    created_by: t.createdBy,
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
  };
}

function rowToToken(r: Selectable<DaemonEnrollTokensTable>): EnrollTokenRecord {
  return {
    workspaceId: r.workspace_id,
    tokenHash: r.token_hash,
    createdBy: r.created_by,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

export function createEnrollTokenRepository(run: QueryRunner): EnrollTokenRepository {
  return workspaceTokenQueries(run, "daemon_enroll_tokens", tokenToRow, rowToToken);
}

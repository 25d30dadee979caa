/**
 * The queries every signing request runs (session and membership checks, the authority lookup,
 * the ledger and audit inserts), compiled once per dialect, run on the driver itself where it
 * allows (SQLite). See lib/prepared.ts and lib/direct.ts.
 *
 * @module
 */
import { prepare, prepareInsert } from "./lib/prepared.js";

export const hot = {
  sessionById: prepare((db, id: string) => db.selectFrom("auth_sessions").selectAll().where("id", "=", id)),
  member: prepare((db, workspaceId: string, userId: string) =>
    db
      .selectFrom("workspace_members")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .where("user_id", "=", userId),
  ),
  authorityById: prepare((db, workspaceId: string, id: string) =>
    db
      .selectFrom("certificate_authorities")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .where("id", "=", id),
  ),
  defaultAuthority: prepare((db, workspaceId: string, kind: string) =>
    db
      .selectFrom("certificate_authorities")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .where("authority_type", "=", kind)
      .where("is_default", "=", 1),
  ),
  insertAuditEvent: prepareInsert("audit_events"),
  insertIssuedCertificate: prepareInsert("issued_certificates"),
};

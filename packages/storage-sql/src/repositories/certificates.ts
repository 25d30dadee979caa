/**
 * The issuance ledger (`issued_certificates`).
 *
 * @module
 */
import type {
  CertificateLimits,
  IssuedCertificateFilter,
  IssuedCertificateRecord,
  IssuedCertificateRepository,
} from "@wap/core/storage";
import type { Expression, ExpressionBuilder, Insertable, Selectable, SqlBool } from "kysely";
import type { SqlDialectTraits } from "../dialect.js";
import {
  fromDate,
  fromDateOrNull,
  toDate,
  toDateOrNull,
  toJson,
  toNumber,
  toStringArray,
} from "../lib/mapping.js";
import { listPageProbe } from "../lib/page.js";
import { prepareInsert } from "../lib/prepared.js";
import { findInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database, IssuedCertificatesTable } from "../schema.js";

/** On the signing path: compiled once per dialect, run on the driver itself where it can be. */
export const insertIssuedCertificate = prepareInsert("issued_certificates");

export function issuedCertificateToRow(c: IssuedCertificateRecord): Insertable<IssuedCertificatesTable> {
  return {
    id: c.id,
    workspace_id: c.workspaceId,
    ca_id: c.caId,
    ca_key_version: c.caKeyVersion,
    kind: c.kind,
    serial: c.serial,
    key_fingerprint: c.keyFingerprint,
    principals: toJson(c.principals),
    valid_after: fromDate(c.validAfter),
    valid_before: fromDate(c.validBefore),
    requester_type: c.requesterType,
    requester_id: c.requesterId,
    target_id: c.targetId,
    key_id: c.keyId,
    created_at: fromDate(c.createdAt),
    revoked_at: fromDateOrNull(c.revokedAt ?? null),
    revocation_reason: c.revocationReason ?? null,
    revoked_by: c.revokedBy ?? null,
    limits: c.limits ? toJson(c.limits) : null,
    single_use: c.singleUse ? 1 : 0,
    step_up_id: c.stepUpId ?? null,
  };
}

function rowToIssuedCertificate(r: Selectable<IssuedCertificatesTable>): IssuedCertificateRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    caId: r.ca_id,
    caKeyVersion: toNumber(r.ca_key_version),
    kind: r.kind as IssuedCertificateRecord["kind"],
    serial: r.serial,
    keyFingerprint: r.key_fingerprint,
    principals: toStringArray(r.principals),
    validAfter: toDate(r.valid_after),
    validBefore: toDate(r.valid_before),
    requesterType: r.requester_type,
    requesterId: r.requester_id,
    targetId: r.target_id,
    keyId: r.key_id,
    createdAt: toDate(r.created_at),
    ...(r.limits !== null && r.limits !== undefined && { limits: JSON.parse(r.limits) as CertificateLimits }),
    ...(Number(r.single_use) === 1 && { singleUse: true }),
    ...(r.step_up_id !== null && r.step_up_id !== undefined && { stepUpId: r.step_up_id }),
    // Revocation fields only on revoked entries, as every adapter's read path returns them.
    ...(r.revoked_at !== null &&
      r.revoked_at !== undefined && {
        revokedAt: toDateOrNull(r.revoked_at),
        revocationReason: r.revocation_reason as IssuedCertificateRecord["revocationReason"],
        revokedBy: r.revoked_by,
      }),
  };
}

function issuedWhere(workspaceId: string, filter: IssuedCertificateFilter) {
  return (eb: ExpressionBuilder<Database, "issued_certificates">): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb("workspace_id", "=", workspaceId)];
    if (filter.caId !== undefined) conditions.push(eb("ca_id", "=", filter.caId));
    if (filter.kind !== undefined) conditions.push(eb("kind", "=", filter.kind));
    if (filter.requesterId !== undefined) conditions.push(eb("requester_id", "=", filter.requesterId));
    if (filter.targetId !== undefined) conditions.push(eb("target_id", "=", filter.targetId));
    // Valid at some instant of [validFrom, validUntil): starts before its end, ends after its start.
    if (filter.validFrom !== undefined) conditions.push(eb("valid_before", ">", fromDate(filter.validFrom)));
    if (filter.validUntil !== undefined) conditions.push(eb("valid_after", "<", fromDate(filter.validUntil)));
    if (filter.revoked !== undefined)
      conditions.push(eb("revoked_at", filter.revoked ? "is not" : "is", null));
    return eb.and(conditions);
  };
}

export function createIssuedCertificateRepository(
  run: QueryRunner,
  dialect: SqlDialectTraits,
): IssuedCertificateRepository {
  return {
    async insert(certificate) {
      await run.write((db) =>
        insertIssuedCertificate.execute(run, db, dialect.name, issuedCertificateToRow(certificate)),
      );
    },
    async findBySerial(workspaceId, caId, serial) {
      const row = await run.read((db) =>
        db
          .selectFrom("issued_certificates")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("ca_id", "=", caId)
          .where("serial", "=", serial)
          .executeTakeFirst(),
      );
      return row ? rowToIssuedCertificate(row) : null;
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "issued_certificates", workspaceId, id));
      return row ? rowToIssuedCertificate(row) : null;
    },
    async list(workspaceId, filter) {
      const where = issuedWhere(workspaceId, filter);
      const page = await run.read((db) =>
        listPageProbe(
          db.selectFrom("issued_certificates").where(where),
          (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"),
          filter,
        ),
      );
      return { items: page.rows.map(rowToIssuedCertificate), total: page.total };
    },
    async revoke(workspaceId, selector, revocation) {
      const at = fromDate(revocation.revokedAt);
      const rows = await run.write((db) => {
        let query = db
          .updateTable("issued_certificates")
          .set({
            revoked_at: at,
            revocation_reason: revocation.reason,
            revoked_by: revocation.revokedBy,
          })
          .where("workspace_id", "=", workspaceId)
          .where("revoked_at", "is", null)
          .where("valid_before", ">", at);
        if (selector.by === "serial") {
          query = query.where("ca_id", "=", selector.caId).where("serial", "=", selector.serial);
        } else if (selector.by === "key") {
          query = query.where("key_fingerprint", "=", selector.keyFingerprint);
          if (selector.caId !== undefined) query = query.where("ca_id", "=", selector.caId);
        } else {
          query = query.where("requester_id", "=", selector.requesterId);
        }
        return query.returningAll().execute();
      });
      return rows.map(rowToIssuedCertificate);
    },
    async revokeAllOfRequester(requesterId, revocation) {
      const at = fromDate(revocation.revokedAt);
      const rows = await run.write((db) =>
        db
          .updateTable("issued_certificates")
          .set({ revoked_at: at, revocation_reason: revocation.reason, revoked_by: revocation.revokedBy })
          .where("requester_id", "=", requesterId)
          .where("revoked_at", "is", null)
          .where("valid_before", ">", at)
          .returningAll()
          .execute(),
      );
      return rows.map(rowToIssuedCertificate);
    },
    async listRevoked(workspaceId, caId, now) {
      const rows = await run.read((db) =>
        db
          .selectFrom("issued_certificates")
          .selectAll()
          .where("ca_id", "=", caId)
          .where("revoked_at", "is not", null)
          .where("valid_before", ">", fromDate(now))
          .where("workspace_id", "=", workspaceId)
          .execute(),
      );
      return rows.map(rowToIssuedCertificate);
    },
    async latestExpiry(workspaceId, caId, caKeyVersion) {
      const row = await run.read((db) =>
        db
          .selectFrom("issued_certificates")
          .where("ca_id", "=", caId)
          .where("ca_key_version", "=", caKeyVersion)
          .where("workspace_id", "=", workspaceId)
          .select((eb) => eb.fn.max("valid_before").as("latest"))
          .executeTakeFirst(),
      );
      return row?.latest === null || row?.latest === undefined ? null : toDate(row.latest);
    },
  };
}

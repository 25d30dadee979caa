/**
 * 010_certificate_lifecycle: revocation in the issuance ledger, staged rotation and key storage
 * on authorities, and the indexes the ledger's filtered pages need. Frozen once released.
 *
 * - `issued_certificates.revoked_at` (null: not revoked), with its reason and who revoked it.
 * - Ledger pages are newest first under one equality filter: each filter column has an index
 *   `(workspace_id, <column>, created_at, id)` so a page is a range walk, never a sort.
 * - Pages are not counted (the storage port says so): a page costs the page.
 * - The revocation lists read the revoked, unexpired entries of one authority: a partial index on
 *   the revoked rows only, so its size is the number of revocations, not of certificates.
 * - `certificate_authorities.next_key` holds the incoming key of a staged rotation as JSON (its
 *   sealed private key base64), null outside one.
 *
 * @module
 */
import { type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

export function certificateLifecycleMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("issued_certificates").addColumn("revoked_at", t.bigint).execute();
      await db.schema.alterTable("issued_certificates").addColumn("revocation_reason", "text").execute();
      await db.schema.alterTable("issued_certificates").addColumn("revoked_by", "text").execute();
      for (const column of ["ca_id", "requester_id", "target_id", "kind"]) {
        await db.schema
          .createIndex(`issued_certificates_workspace_${column}_created_idx`)
          .on("issued_certificates")
          .columns(["workspace_id", column, "created_at", "id"])
          .execute();
      }
      // The revoked entries only, newest first: the list of revocations, whatever its share.
      await db.schema
        .createIndex("issued_certificates_workspace_revoked_created_idx")
        .on("issued_certificates")
        .columns(["workspace_id", "created_at", "id"])
        .where(sql.ref("revoked_at"), "is not", null)
        .execute();
      await db.schema
        .createIndex("issued_certificates_workspace_fingerprint_idx")
        .on("issued_certificates")
        .columns(["workspace_id", "key_fingerprint"])
        .execute();
      // Revoking everything an account asked for, in every workspace, when it is deleted.
      await db.schema
        .createIndex("issued_certificates_requester_idx")
        .on("issued_certificates")
        .columns(["requester_id", "valid_before"])
        .execute();
      await db.schema
        .createIndex("issued_certificates_revoked_idx")
        .on("issued_certificates")
        .columns(["ca_id", "valid_before"])
        .where(sql.ref("revoked_at"), "is not", null)
        .execute();

      await db.schema
        .alterTable("certificate_authorities")
        .addColumn("key_storage", "text", (col) => col.notNull().defaultTo("software"))
        .execute();
      await db.schema
        .alterTable("certificate_authorities")
        .addColumn("rotation_phase", "text", (col) => col.notNull().defaultTo("none"))
        .execute();
      await db.schema.alterTable("certificate_authorities").addColumn("next_key", "text").execute();
    },
  };
}

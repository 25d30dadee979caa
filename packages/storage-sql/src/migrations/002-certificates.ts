/**
 * 002_certificates: targets, the issuance ledger, and the retired keys of rolled-over authorities.
 * Frozen once released, like 001.
 *
 * - `targets.ca_id` references its authority with NO ACTION (checked at the end of the statement):
 *   an authority in use cannot be deleted, while deleting a workspace still removes both at once.
 * - `issued_certificates` has no foreign key to the authority: the ledger outlives it, and goes
 *   only with the workspace. `serial` is text because an SSH serial is a uint64 (beyond bigint).
 * - `certificate_authority_keys` keeps only the public half of retired keys.
 *
 * @module
 */
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function certificatesMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const millis = (table: Table, name: string) => table.addColumn(name, t.bigint, (col) => col.notNull());
  const integer = (table: Table, name: string) => table.addColumn(name, "integer", (col) => col.notNull());
  const workspace = (table: Table) =>
    table.addColumn("workspace_id", "text", (col) =>
      col.notNull().references("workspaces.id").onDelete("cascade"),
    );

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let targets: Table = db.schema.createTable("targets");
      targets = text(targets, "id").addPrimaryKeyConstraint("targets_pkey", ["id"]);
      targets = workspace(targets);
      targets = targets.addColumn("ca_id", "text", (col) =>
        col.notNull().references("certificate_authorities.id").onDelete("no action"),
      );
      targets = text(targets, "daemon_id", true);
      for (const name of ["name", "name_folded", "description", "tags", "endpoints", "metadata"]) {
        targets = text(targets, name);
      }
      targets = millis(targets, "created_at");
      targets = millis(targets, "updated_at");
      await targets.addUniqueConstraint("targets_workspace_name_key", ["workspace_id", "name"]).execute();
      await db.schema
        .createIndex("targets_workspace_created_idx")
        .on("targets")
        .columns(["workspace_id", "created_at"])
        .execute();
      // countByCa, and the foreign key check when an authority is deleted.
      await db.schema.createIndex("targets_ca_idx").on("targets").columns(["ca_id"]).execute();

      let issued: Table = db.schema.createTable("issued_certificates");
      issued = text(issued, "id").addPrimaryKeyConstraint("issued_certificates_pkey", ["id"]);
      issued = workspace(issued);
      issued = text(issued, "ca_id");
      issued = integer(issued, "ca_key_version");
      issued = issued.addColumn("kind", "text", (col) =>
        col.notNull().check(sql`kind in ('ssh_user', 'ssh_host', 'x509')`),
      );
      for (const name of ["serial", "key_fingerprint", "principals"]) issued = text(issued, name);
      issued = millis(issued, "valid_after");
      issued = millis(issued, "valid_before");
      issued = text(issued, "requester_type");
      issued = text(issued, "requester_id");
      issued = text(issued, "target_id", true);
      issued = text(issued, "key_id");
      issued = millis(issued, "created_at");
      await issued.addUniqueConstraint("issued_certificates_ca_serial_key", ["ca_id", "serial"]).execute();
      await db.schema
        .createIndex("issued_certificates_workspace_created_idx")
        .on("issued_certificates")
        .columns(["workspace_id", "created_at"])
        .execute();
      // latestExpiry at rollover: the max is one index probe, not a scan of the authority's rows.
      await db.schema
        .createIndex("issued_certificates_ca_version_expiry_idx")
        .on("issued_certificates")
        .columns(["ca_id", "ca_key_version", "valid_before"])
        .execute();

      let keys: Table = db.schema.createTable("certificate_authority_keys");
      keys = workspace(keys);
      keys = keys.addColumn("ca_id", "text", (col) =>
        col.notNull().references("certificate_authorities.id").onDelete("cascade"),
      );
      keys = integer(keys, "version");
      keys = text(keys, "key_type");
      keys = integer(keys, "key_bits");
      for (const name of ["public_key", "certificate", "serial_number"]) keys = text(keys, name);
      for (const name of ["not_before", "not_after", "created_at", "retired_at", "trusted_until"]) {
        keys = millis(keys, name);
      }
      await keys.addPrimaryKeyConstraint("certificate_authority_keys_pkey", ["ca_id", "version"]).execute();
    },
  };
}

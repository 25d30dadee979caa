/**
 * 007_instances: the leases of the server instances that hold daemon control streams. A daemon
 * is online while an instance whose lease is live holds its stream (`daemons.online_holder` is
 * `<instanceId>/<streamId>`); holders of a lapsed instance are released by any live one.
 * Frozen once released.
 *
 * @module
 */
import type { Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

export function instancesMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("server_instances")
        .addColumn("id", "text", (col) => col.primaryKey())
        .addColumn("started_at", t.bigint, (col) => col.notNull())
        .addColumn("lease_expires_at", t.bigint, (col) => col.notNull())
        .execute();
    },
  };
}

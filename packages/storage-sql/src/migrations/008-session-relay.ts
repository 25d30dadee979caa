/**
 * 008_session_relay: which server instance relays each open terminal session (holds its daemon's
 * session stream), and where the other instances reach it, so that a browser attaching through
 * any instance is forwarded there. Terminal bytes never pass through the database. Frozen once
 * released.
 *
 * @module
 */
import type { Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

export function sessionRelayMigration(_dialect: SqlDialectName): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // SQLite adds one column per statement; sessions opened before stay without a relay.
      await db.schema.alterTable("daemon_sessions").addColumn("relay_instance", "text").execute();
      await db.schema.alterTable("daemon_sessions").addColumn("relay_url", "text").execute();
      // The sweep of open sessions whose relaying instance is gone.
      await db.schema
        .createIndex("daemon_sessions_relay_idx")
        .on("daemon_sessions")
        .columns(["state", "relay_instance"])
        .execute();
    },
  };
}

/**
 * 006_daemons: the daemon protocol. The workspace enrolment token; on daemons, who holds the
 * control stream and what the last SyncDaemon reported and answered; and web-terminal sessions.
 * Frozen once released.
 *
 * @module
 */
import { type CreateTableBuilder, type Kysely, type Migration, sql } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer" },
  postgres: { bigint: "bigint" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function daemonsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const millis = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let tokens: Table = db.schema.createTable("daemon_enroll_tokens");
      tokens = tokens.addColumn("workspace_id", "text", (col) =>
        col.primaryKey().references("workspaces.id").onDelete("cascade"),
      );
      for (const name of ["token_hash", "created_by"]) tokens = text(tokens, name);
      tokens = millis(tokens, "created_at");
      tokens = millis(tokens, "expires_at");
      await tokens.addUniqueConstraint("daemon_enroll_tokens_token_hash_key", ["token_hash"]).execute();

      // SQLite adds one column per statement; defaults fill the rows of daemons enrolled before.
      const daemons = () => db.schema.alterTable("daemons");
      await daemons().addColumn("online_holder", "text").execute();
      await daemons()
        .addColumn("reported_users", "text", (col) => col.notNull().defaultTo("[]"))
        .execute();
      await daemons()
        .addColumn("sent_principals", "text", (col) => col.notNull().defaultTo("{}"))
        .execute();
      await daemons().addColumn("synced_at", t.bigint).execute();
      // Enrollment looks a key up in the token's workspace (re-enrollment).
      await db.schema
        .createIndex("daemons_workspace_key_idx")
        .on("daemons")
        .columns(["workspace_id", "auth_public_key"])
        .execute();
      await db.schema
        .createIndex("daemons_online_holder_idx")
        .on("daemons")
        .column("online_holder")
        .execute();

      let sessions: Table = db.schema.createTable("daemon_sessions");
      sessions = text(sessions, "id").addPrimaryKeyConstraint("daemon_sessions_pkey", ["id"]);
      sessions = sessions.addColumn("workspace_id", "text", (col) =>
        col.notNull().references("workspaces.id").onDelete("cascade"),
      );
      // A deleted daemon's sessions go with it.
      sessions = sessions.addColumn("daemon_id", "text", (col) =>
        col.notNull().references("daemons.id").onDelete("cascade"),
      );
      for (const name of ["user_id", "username"]) sessions = text(sessions, name);
      sessions = sessions.addColumn("state", "text", (col) =>
        col.notNull().check(sql`state in ('pending', 'open', 'closed')`),
      );
      sessions = millis(sessions, "created_at");
      sessions = millis(sessions, "opened_at", true);
      sessions = millis(sessions, "closed_at", true);
      sessions = text(sessions, "close_reason");
      await sessions.execute();
      await db.schema
        .createIndex("daemon_sessions_daemon_state_idx")
        .on("daemon_sessions")
        .columns(["daemon_id", "state", "created_at"])
        .execute();
      // The sweep of sessions no daemon claimed in time.
      await db.schema
        .createIndex("daemon_sessions_state_created_idx")
        .on("daemon_sessions")
        .columns(["state", "created_at"])
        .execute();
    },
  };
}

/**
 * 017_ssh_sessions: SSH logins made through sshd with a platform certificate, registered by the
 * daemon's agent before the login runs anything, and ended with their exit status and byte
 * counts. A daemon's logins go with it, as its terminal sessions do. `daemons.require_recording`:
 * the daemon's policy when a login cannot be registered or recorded (1: refuse or end it).
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

export function sshSessionsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      const text = (table: Table, name: string) => table.addColumn(name, "text", (col) => col.notNull());
      const bigint = (table: Table, name: string, nullable = false) =>
        table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
      let sessions: Table = db.schema
        .createTable("ssh_sessions")
        .addColumn("id", "text", (col) => col.primaryKey())
        .addColumn("workspace_id", "text", (col) =>
          col.notNull().references("workspaces.id").onDelete("cascade"),
        )
        .addColumn("daemon_id", "text", (col) => col.notNull().references("daemons.id").onDelete("cascade"));
      for (const column of [
        "subject_id",
        "subject_type",
        "username",
        "ca_id",
        "certificate_serial",
        "key_id",
        "client_address",
        "command",
        "ended_by",
        "end_reason",
      ]) {
        sessions = text(sessions, column);
      }
      sessions = sessions.addColumn("kind", "text", (col) =>
        col.notNull().check(sql`kind in ('shell', 'exec', 'subsystem')`),
      );
      sessions = sessions.addColumn("tty", "integer", (col) => col.notNull());
      sessions = sessions.addColumn("recorded", "integer", (col) => col.notNull());
      sessions = bigint(sessions, "started_at");
      sessions = bigint(sessions, "ended_at", true);
      sessions = sessions.addColumn("exit_status", "integer");
      sessions = bigint(sessions, "bytes_in");
      sessions = bigint(sessions, "bytes_out");
      await sessions.execute();
      // The live logins of a daemon: what revocation checks and ListSessions lists.
      await db.schema
        .createIndex("ssh_sessions_daemon_live_idx")
        .on("ssh_sessions")
        .columns(["workspace_id", "daemon_id", "ended_at"])
        .execute();
      await db.schema
        .alterTable("daemons")
        .addColumn("require_recording", "integer", (col) => col.notNull().defaultTo(0))
        .execute();
    },
  };
}

/**
 * 009_recordings: session recordings. One row per recording, and its file as numbered chunks
 * appended while the session runs. Recordings belong to their workspace only: they outlive the
 * daemon and the session they recorded (an audit trail), and go with the workspace.
 * Frozen once released.
 *
 * @module
 */
import type { CreateTableBuilder, Kysely, Migration } from "kysely";
import type { SqlDialectName } from "../dialect.js";

/** Fixed here, like 001's, so this migration never changes when a later one does. */
const types = {
  sqlite: { bigint: "integer", flag: "integer", bytes: "blob" },
  postgres: { bigint: "bigint", flag: "smallint", bytes: "bytea" },
} as const;

type Table = CreateTableBuilder<string, string>;

export function recordingsMigration(dialect: SqlDialectName): Migration {
  const t = types[dialect];
  const text = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, "text", (col) => (nullable ? col : col.notNull()));
  const bigint = (table: Table, name: string, nullable = false) =>
    table.addColumn(name, t.bigint, (col) => (nullable ? col : col.notNull()));
  const flag = (table: Table, name: string) =>
    table.addColumn(name, t.flag, (col) => col.notNull().defaultTo(0));

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      let recordings: Table = db.schema.createTable("recordings");
      recordings = text(recordings, "id").addPrimaryKeyConstraint("recordings_pkey", ["id"]);
      recordings = recordings.addColumn("workspace_id", "text", (col) =>
        col.notNull().references("workspaces.id").onDelete("cascade"),
      );
      // No foreign keys to the daemon, target or session: the recording outlives them.
      for (const name of ["daemon_id", "username", "user_id", "format"]) recordings = text(recordings, name);
      recordings = text(recordings, "target_id", true);
      recordings = recordings.addColumn("size_bytes", t.bigint, (col) => col.notNull().defaultTo(0));
      recordings = recordings.addColumn("chunk_count", t.bigint, (col) => col.notNull().defaultTo(0));
      recordings = flag(recordings, "complete");
      recordings = flag(recordings, "truncated");
      recordings = bigint(recordings, "started_at");
      recordings = bigint(recordings, "ended_at", true);
      await recordings.execute();
      // ListRecordings: newest first in a workspace, also per subject (a member's own).
      await db.schema
        .createIndex("recordings_workspace_started_idx")
        .on("recordings")
        .columns(["workspace_id", "started_at", "id"])
        .execute();
      await db.schema
        .createIndex("recordings_workspace_user_started_idx")
        .on("recordings")
        .columns(["workspace_id", "user_id", "started_at"])
        .execute();

      let chunks: Table = db.schema.createTable("recording_chunks");
      chunks = chunks.addColumn("recording_id", "text", (col) =>
        col.notNull().references("recordings.id").onDelete("cascade"),
      );
      chunks = chunks.addColumn("workspace_id", "text", (col) =>
        col.notNull().references("workspaces.id").onDelete("cascade"),
      );
      chunks = chunks.addColumn("seq", t.bigint, (col) => col.notNull());
      chunks = chunks.addColumn("data", t.bytes, (col) => col.notNull());
      // The primary key is the keyset the file is read back in.
      await chunks.addPrimaryKeyConstraint("recording_chunks_pkey", ["recording_id", "seq"]).execute();
    },
  };
}

/**
 * Session recordings (`recordings`, `recording_chunks`). A chunk is appended with a compare-and-
 * set on the recording's `chunk_count`, so chunks are numbered without gaps and a completed
 * recording takes no more; the file is read back in keyset pages of the `(recording_id, seq)` key.
 *
 * @module
 */
import type {
  RecordingChunkRecord,
  RecordingFilter,
  RecordingFormat,
  RecordingRecord,
  RecordingRepository,
} from "@wap/core/storage";
import { type ExpressionBuilder, type Insertable, type Selectable, sql } from "kysely";
import {
  fromBytes,
  fromDate,
  fromDateOrNull,
  fromFlag,
  toBytes,
  toDate,
  toDateOrNull,
  toFlag,
  toNumber,
} from "../lib/mapping.js";
import { deleteInWorkspace, findInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";
import type { RecordingsTable } from "../schema-recordings.js";

function recordingToRow(r: RecordingRecord): Insertable<RecordingsTable> {
  return {
    id: r.id,
    workspace_id: r.workspaceId,
    daemon_id: r.daemonId,
    target_id: r.targetId,
    username: r.username,
    user_id: r.userId,
    format: r.format,
    size_bytes: r.sizeBytes,
    chunk_count: r.chunkCount,
    complete: toFlag(r.complete),
    truncated: toFlag(r.truncated),
    started_at: fromDate(r.startedAt),
    ended_at: fromDateOrNull(r.endedAt),
  };
}

function rowToRecording(r: Selectable<RecordingsTable>): RecordingRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    daemonId: r.daemon_id,
    targetId: r.target_id,
    username: r.username,
    userId: r.user_id,
    format: r.format as RecordingFormat,
    sizeBytes: toNumber(r.size_bytes),
    chunkCount: toNumber(r.chunk_count),
    complete: fromFlag(r.complete),
    truncated: fromFlag(r.truncated),
    startedAt: toDate(r.started_at),
    endedAt: toDateOrNull(r.ended_at),
  };
}

/** The recordings of a workspace that `filter` selects. */
function recordingFilter(workspaceId: string, filter: Omit<RecordingFilter, "limit" | "offset">) {
  return (eb: ExpressionBuilder<Database, "recordings">) => {
    const conditions = [eb("workspace_id", "=", workspaceId)];
    if (filter.daemonId !== undefined) conditions.push(eb("daemon_id", "=", filter.daemonId));
    if (filter.username !== undefined) conditions.push(eb("username", "=", filter.username));
    if (filter.userId !== undefined) conditions.push(eb("user_id", "=", filter.userId));
    return eb.and(conditions);
  };
}

export function createRecordingRepository(run: QueryRunner): RecordingRepository {
  return {
    async insert(recording) {
      await run.write((db) => db.insertInto("recordings").values(recordingToRow(recording)).execute());
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) => findInWorkspace(db, "recordings", workspaceId, id));
      return row ? rowToRecording(row) : null;
    },
    async list(workspaceId, filter) {
      const where = recordingFilter(workspaceId, filter);
      const [rows, totals] = await Promise.all([
        run.read((db) =>
          db
            .selectFrom("recordings")
            .selectAll()
            .where(where)
            .orderBy("started_at", "desc")
            .orderBy("id", "desc")
            .limit(filter.limit)
            .offset(filter.offset)
            .execute(),
        ),
        run.read((db) =>
          db
            .selectFrom("recordings")
            .where(where)
            .select((eb) => [
              eb.fn.countAll().as("n"),
              eb.fn.coalesce(eb.fn.sum("size_bytes"), eb.lit(0)).as("bytes"),
            ])
            .executeTakeFirstOrThrow(),
        ),
      ]);
      return {
        items: rows.map(rowToRecording),
        total: toNumber(totals.n as number | string | bigint),
        totalBytes: toNumber(totals.bytes as number | string | bigint),
      };
    },
    async appendChunk(workspaceId, id, chunk, options = {}) {
      const claimed = await run.write((db) =>
        db
          .updateTable("recordings")
          .set({
            size_bytes: sql<number>`${sql.ref("size_bytes")} + ${chunk.data.byteLength}`,
            chunk_count: sql<number>`${sql.ref("chunk_count")} + 1`,
            ...(options.truncated && { truncated: toFlag(true) }),
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("complete", "=", toFlag(false))
          .where("chunk_count", "=", chunk.seq)
          .executeTakeFirst(),
      );
      if (claimed.numUpdatedRows === 0n) return false;
      await run.write((db) =>
        db
          .insertInto("recording_chunks")
          .values({
            recording_id: id,
            workspace_id: workspaceId,
            seq: chunk.seq,
            data: fromBytes(chunk.data),
          })
          .execute(),
      );
      return true;
    },
    async complete(workspaceId, id, endedAt) {
      const row = await run.write((db) =>
        db
          .updateTable("recordings")
          .set({ complete: toFlag(true), ended_at: fromDate(endedAt) })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .where("complete", "=", toFlag(false))
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToRecording(row) : null;
    },
    async scanChunks(workspaceId, id, scan) {
      const rows = await run.read((db) => {
        let query = db
          .selectFrom("recording_chunks")
          .select(["seq", "data"])
          .where("recording_id", "=", id)
          .where("workspace_id", "=", workspaceId)
          .orderBy("seq")
          .limit(scan.limit);
        if (scan.afterSeq !== undefined) query = query.where("seq", ">", scan.afterSeq);
        return query.execute();
      });
      return rows.map((r): RecordingChunkRecord => ({ seq: toNumber(r.seq), data: toBytes(r.data) }));
    },
    async delete(workspaceId, id) {
      return run.write((db) => deleteInWorkspace(db, "recordings", workspaceId, id));
    },
  };
}

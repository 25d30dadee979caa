/**
 * The session-recording tables (migration 009) as Kysely sees them; part of {@link Database}.
 *
 * @module
 */
import type { BigIntColumn, BytesColumn, FlagColumn, MillisColumn, NullableMillisColumn } from "./schema.js";

export interface RecordingsTable {
  id: string;
  workspace_id: string;
  daemon_id: string;
  target_id: string | null;
  username: string;
  user_id: string;
  format: string;
  size_bytes: BigIntColumn;
  chunk_count: BigIntColumn;
  complete: FlagColumn;
  truncated: FlagColumn;
  started_at: MillisColumn;
  ended_at: NullableMillisColumn;
}

export interface RecordingChunksTable {
  recording_id: string;
  workspace_id: string;
  seq: BigIntColumn;
  data: BytesColumn;
}

/** The tables of migration 009. */
export interface RecordingTables {
  recordings: RecordingsTable;
  recording_chunks: RecordingChunksTable;
}

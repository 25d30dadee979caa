/**
 * Session recordings (`recordings`, `recording_chunks`): one row per recording and its file in
 * appended chunks (migration 009).
 *
 * A recording is written while its session runs, one chunk per transaction, and read back in
 * keyset pages of chunks, so neither side ever holds a whole recording.
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";

/** The one file format recordings are kept in. */
export type RecordingFormat = "asciicast-v2";

/** The recording of one web-terminal session. */
export interface RecordingRecord {
  /** The id of the session recorded. */
  readonly id: string;
  readonly workspaceId: string;
  readonly daemonId: string;
  /** The daemon's target when the session started, or null when it had none. */
  readonly targetId: string | null;
  /** The Unix account the session ran as. */
  readonly username: string;
  /** The subject the session ran for (a user id, or a service-account id). */
  readonly userId: string;
  readonly format: RecordingFormat;
  /** The sum of the sizes of its chunks. */
  readonly sizeBytes: number;
  /** How many chunks it has (they are numbered 0 to chunkCount - 1). */
  readonly chunkCount: number;
  /** True once the recorder closed it; false while it runs or when the server stopped first. */
  readonly complete: boolean;
  /** True when the size limit stopped the recording before the session ended. */
  readonly truncated: boolean;
  readonly startedAt: Date;
  /** When it was completed; null until then. */
  readonly endedAt: Date | null;
}

/** One piece of a recording's file. */
export interface RecordingChunkRecord {
  /** Its place in the file: 0, 1, 2, ... */
  readonly seq: number;
  readonly data: Uint8Array;
}

export interface RecordingFilter extends PageRequest {
  readonly daemonId?: string;
  readonly username?: string;
  /** Only the recordings of sessions run for this subject. */
  readonly userId?: string;
}

/** One page of recordings, with the number and the total size of all that match. */
export interface RecordingPage extends Page<RecordingRecord> {
  readonly totalBytes: number;
}

export interface RecordingChunkScan {
  /** Where the previous page ended (the last `seq` read); absent for the first page. */
  readonly afterSeq?: number;
  readonly limit: number;
}

export interface RecordingRepository {
  /**
   * Starts a recording (no chunks, size 0). Throws {@link UniqueViolationError}
   * (`recordings.id`) when the session is recorded already.
   */
  insert(recording: RecordingRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<RecordingRecord | null>;
  /** Newest first (by `startedAt`, then id), with the count and total size of every match. */
  list(workspaceId: string, filter: RecordingFilter): Promise<RecordingPage>;
  /**
   * Appends the next chunk (`seq` = the recording's `chunkCount`), adds its size, and with
   * `truncated` marks the recording truncated; call it inside a transaction. Returns false,
   * writing nothing, when the recording does not exist in the workspace, is complete, or `seq`
   * is not the next one.
   */
  appendChunk(
    workspaceId: string,
    id: string,
    chunk: RecordingChunkRecord,
    options?: { readonly truncated?: boolean },
  ): Promise<boolean>;
  /**
   * Marks the recording complete at `endedAt`. Returns the completed record to exactly one
   * caller; null when it is unknown or complete already.
   */
  complete(workspaceId: string, id: string, endedAt: Date): Promise<RecordingRecord | null>;
  /** Chunks in file order, the next `limit` after `afterSeq`; fewer than `limit` at the end. */
  scanChunks(workspaceId: string, id: string, scan: RecordingChunkScan): Promise<RecordingChunkRecord[]>;
  /** Deletes the recording and its chunks. Returns false when it did not exist in the workspace. */
  delete(workspaceId: string, id: string): Promise<boolean>;
}

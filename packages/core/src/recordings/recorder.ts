/**
 * Records a web-terminal session as it passes through the server's relay, as an asciicast v2
 * file (https://docs.asciinema.org/manual/asciicast/v2/) stored in appended chunks.
 *
 * Memory stays bounded however long the session runs: output waits in memory until 64 KiB are
 * pending or `recordingFlushIntervalMs` has passed, then goes to storage one chunk per small
 * transaction. The file stops growing at `recordingMaxBytes`: a marker event says so and the
 * recording is flagged `truncated`. If storage falls far behind (more than
 * {@link maxBacklogBytes} waiting), recording stops the same way rather than buffer without
 * bound. The relay never waits for storage: `output` and `resize` return at once.
 *
 * A recording becomes `complete` only when `close()` has written everything; one whose writes
 * failed (storage down, or the recording deleted meanwhile) stays incomplete. Completing it
 * appends `recording.complete` to the workspace's audit chain, in the same transaction, with the
 * SHA-256 of the whole file, its size and what it recorded: an edited file no longer matches the
 * chain (docs/audit.md).
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { appendAudit, noRequest } from "../audit/record.js";
import type { Services } from "../operations/services.js";
import type { DaemonSessionRecord } from "../storage/daemon-sessions.js";
import type { RecordingRecord } from "../storage/recordings.js";
import { UniqueViolationError } from "../storage/storage.js";
import { recordingBytesOf } from "../workspaces/quotas.js";

/** What the relay feeds a recording. */
export interface SessionRecorder {
  /** Bytes the session wrote to the terminal (stdout), as received. */
  output(data: Uint8Array): void;
  /** The terminal was resized. */
  resize(width: number, height: number): void;
  /** The session ended: writes what is buffered and marks the recording complete. Never rejects. */
  close(): Promise<void>;
}

/** Options of one recording beyond the platform's settings. */
export interface SessionRecordingOptions {
  /** Told when writing the recording fails; it then stops (incomplete). Default: ignore. */
  readonly onError?: (error: unknown) => void;
  /** A smaller limit than `recordingMaxBytes` for this file (what the workspace's quota leaves). */
  readonly maxBytes?: number;
}

/** The largest chunk stored (and streamed by GetRecording). */
export const recordingChunkBytes = 64 * 1024;
/** Bytes waiting for storage (buffered and being written) past which recording stops. */
export const maxBacklogBytes = 4 * 1024 * 1024;
/** Room kept under the size limit for the marker event that ends a truncated file. */
const markerReserveBytes = 256;
/** The terminal size used when the relay reports none (or a nonsensical one). */
const defaultSize = { width: 80, height: 24 } as const;
const maxDimension = 10_000;

const validDimension = (n: number) => Number.isInteger(n) && n >= 1 && n <= maxDimension;

/**
 * Starts recording `session` when its daemon records sessions (`config.recordSessions`);
 * null when it does not, or when the session is being recorded already. Throws when the
 * recording cannot be created (storage unavailable): the relay decides whether the session may
 * run unrecorded.
 */
export async function startSessionRecording(
  services: Services,
  session: DaemonSessionRecord,
  size: { width: number; height: number },
  options: SessionRecordingOptions = {},
): Promise<SessionRecorder | null> {
  const daemon = await services.storage.daemons.findById(session.workspaceId, session.daemonId);
  if (!daemon?.recordSessions) return null;
  const recording: RecordingRecord = {
    id: session.id,
    workspaceId: session.workspaceId,
    daemonId: session.daemonId,
    targetId: daemon.targetId,
    username: session.username,
    userId: session.userId,
    format: "asciicast-v2",
    sizeBytes: 0,
    chunkCount: 0,
    complete: false,
    truncated: false,
    startedAt: services.clock.now(),
    endedAt: null,
  };
  // The workspace's quota bounds this file too: it may fill what is left, no more.
  const used = await recordingBytesOf(services.storage, session.workspaceId);
  const room = services.config.workspaceMaxRecordingBytes - used;
  try {
    await services.storage.recordings.insert(recording);
  } catch (error) {
    if (error instanceof UniqueViolationError) return null;
    throw error;
  }
  return new SessionRecording(services, recording, size, { ...options, maxBytes: room });
}

/**
 * The audit resource of a completed recording: `recording:<id> sha256=<hex> bytes=<n>
 * truncated=<bool>` and ` target=<id>` when it had one.
 */
export function recordingCompleteResource(r: {
  id: string;
  sha256: string;
  bytes: number;
  truncated: boolean;
  targetId: string | null;
}): string {
  const target = r.targetId === null ? "" : ` target=${r.targetId}`;
  return `recording:${r.id} sha256=${r.sha256} bytes=${r.bytes} truncated=${r.truncated}${target}`;
}

/** One recording in progress. Exported for tests, which look at how much it holds. */
export class SessionRecording implements SessionRecorder {
  readonly #services: Services;
  readonly #recording: RecordingRecord;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #startedAt: number;
  readonly #maxBytes: number;
  readonly #decoder = new TextDecoder("utf-8");
  readonly #encoder = new TextEncoder();
  /** Encoded lines not yet handed to storage. */
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Bytes handed to storage and not yet written. */
  #inFlightBytes = 0;
  /** Size of the file so far, pending bytes included. */
  #fileBytes = 0;
  #nextSeq = 0;
  /** The last event time, in seconds: times never go backwards, even if the clock does. */
  #lastTime = 0;
  #writes: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** No more events: the size limit or the backlog was reached, or a write failed. */
  #stopped = false;
  #truncated = false;
  #failed = false;
  #closing: Promise<void> | undefined;
  /** SHA-256 of the chunks written, in order. */
  readonly #digest: Hash = createHash("sha256");
  #writtenBytes = 0;

  constructor(
    services: Services,
    recording: RecordingRecord,
    size: { width: number; height: number },
    options: SessionRecordingOptions,
  ) {
    this.#services = services;
    this.#recording = recording;
    this.#onError = options.onError;
    this.#startedAt = recording.startedAt.getTime();
    const limit = Math.min(services.config.recordingMaxBytes, options.maxBytes ?? Number.POSITIVE_INFINITY);
    this.#maxBytes = Math.max(limit, 2 * markerReserveBytes);
    const valid = validDimension(size.width) && validDimension(size.height);
    const { width, height } = valid ? size : defaultSize;
    this.#push(
      `${JSON.stringify({ version: 2, width, height, timestamp: Math.floor(this.#startedAt / 1000) })}\n`,
    );
  }

  /** Bytes held in memory for storage (pending and being written). */
  get backlogBytes(): number {
    return this.#pendingBytes + this.#inFlightBytes;
  }

  output(data: Uint8Array): void {
    if (this.#stopped || this.#closing) return;
    // One event per 64 KiB of output at most: one huge write does not become one huge line.
    for (let offset = 0; offset < data.byteLength && !this.#stopped; offset += recordingChunkBytes) {
      // Streaming: a character split across two outputs is decoded whole with the second.
      const text = this.#decoder.decode(data.subarray(offset, offset + recordingChunkBytes), {
        stream: true,
      });
      if (text !== "") this.#event("o", text);
    }
  }

  resize(width: number, height: number): void {
    if (this.#stopped || this.#closing) return;
    if (!validDimension(width) || !validDimension(height)) return;
    this.#event("r", `${width}x${height}`);
  }

  close(): Promise<void> {
    this.#closing ??= this.#finish();
    return this.#closing;
  }

  async #finish(): Promise<void> {
    if (!this.#stopped) {
      const rest = this.#decoder.decode();
      if (rest !== "") this.#event("o", rest);
    }
    this.#flush(true);
    await this.#writes;
    if (this.#failed) return;
    try {
      const { workspaceId, id, userId, targetId } = this.#recording;
      const at = this.#services.clock.now();
      const sha256 = this.#digest.digest("hex");
      await this.#services.storage.transaction(async (tx) => {
        const completed = await tx.recordings.complete(workspaceId, id, at);
        if (completed === null) return;
        await appendAudit(tx, this.#services, noRequest, {
          workspaceId,
          actorType: "user",
          actorId: userId,
          action: "recording.complete",
          resource: recordingCompleteResource({
            id,
            sha256,
            bytes: this.#writtenBytes,
            truncated: completed.truncated,
            targetId,
          }),
          at,
        });
      });
    } catch (error) {
      this.#onError?.(error);
    }
  }

  /** Seconds since the start, to the millisecond, never less than the previous event's. */
  #time(): number {
    const elapsed = Math.round(this.#services.clock.now().getTime() - this.#startedAt) / 1000;
    this.#lastTime = Math.max(this.#lastTime, elapsed);
    return this.#lastTime;
  }

  #event(type: "o" | "r", data: string): void {
    const line = this.#encoder.encode(`${JSON.stringify([this.#time(), type, data])}\n`);
    if (this.#fileBytes + line.byteLength > this.#maxBytes - markerReserveBytes) {
      this.#stop(`recording stopped: the size limit of ${this.#maxBytes} bytes was reached`);
    } else if (this.backlogBytes + line.byteLength > maxBacklogBytes - markerReserveBytes) {
      this.#stop("recording stopped: storage could not keep up with the output");
    } else {
      this.#push(line);
    }
  }

  /** Ends the file with a marker event saying why, and flags the recording truncated. */
  #stop(reason: string): void {
    this.#stopped = true;
    this.#truncated = true;
    this.#push(`${JSON.stringify([this.#time(), "m", reason])}\n`);
    this.#flush(true);
  }

  #push(line: string | Uint8Array): void {
    const bytes = typeof line === "string" ? this.#encoder.encode(line) : line;
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.byteLength;
    this.#fileBytes += bytes.byteLength;
    if (this.#pendingBytes >= recordingChunkBytes) this.#flush(false);
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#flush(true), this.#services.config.recordingFlushIntervalMs);
      // A recording never keeps the process alive.
      this.#timer.unref?.();
    }
  }

  /** Hands pending bytes to storage in chunks of 64 KiB; with `all`, the partial last one too. */
  #flush(all: boolean): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#pendingBytes === 0) return;
    const pending = joinBytes(this.#pending, this.#pendingBytes);
    const cut = all ? pending.byteLength : pending.byteLength - (pending.byteLength % recordingChunkBytes);
    const chunks: Uint8Array[] = [];
    for (let offset = 0; offset < cut; offset += recordingChunkBytes) {
      chunks.push(pending.subarray(offset, Math.min(offset + recordingChunkBytes, cut)));
    }
    const rest = pending.subarray(cut);
    this.#pending = rest.byteLength > 0 ? [rest] : [];
    this.#pendingBytes = rest.byteLength;
    if (rest.byteLength > 0 && this.#timer === undefined && !this.#closing) {
      this.#timer = setTimeout(() => this.#flush(true), this.#services.config.recordingFlushIntervalMs);
      this.#timer.unref?.();
    }
    const truncated = this.#truncated;
    for (const chunk of chunks) {
      this.#inFlightBytes += chunk.byteLength;
      this.#writes = this.#writes.then(() => this.#write(chunk, truncated));
    }
  }

  async #write(chunk: Uint8Array, truncated: boolean): Promise<void> {
    try {
      if (this.#failed) return;
      const { workspaceId, id } = this.#recording;
      const seq = this.#nextSeq;
      const appended = await this.#services.storage.transaction((tx) =>
        tx.recordings.appendChunk(workspaceId, id, { seq, data: chunk }, { truncated }),
      );
      if (!appended) {
        // Deleted (or completed) meanwhile: nothing more to record.
        this.#fail(undefined);
        return;
      }
      this.#nextSeq = seq + 1;
      this.#digest.update(chunk);
      this.#writtenBytes += chunk.byteLength;
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#inFlightBytes -= chunk.byteLength;
    }
  }

  #fail(error: unknown): void {
    this.#failed = true;
    this.#stopped = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (error !== undefined) this.#onError?.(error);
  }
}

function joinBytes(parts: readonly Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/**
 * DaemonService.AppendSSHRecording: the recording of an SSH login, written by the daemon's agent
 * (which sees the login's bytes through its session wrapper) as an asciicast v2 file, in the same
 * storage, listing, download and player as browser terminals' recordings (docs/recordings.md).
 *
 * Appends are by offset, so an agent that lost an answer (or its connection) sends the same bytes
 * again without harm: bytes before the stored size are skipped, an offset past it is
 * `failed_precondition` RECORDING_OFFSET (the message says the size to resume from). The file
 * stops growing at the platform's `recordingMaxBytes` or what the workspace's quota leaves; the
 * recording is then flagged `truncated` and later bytes are acknowledged and dropped. `final`
 * completes it, auditing `recording.complete` with the SHA-256 of the whole file, as a browser
 * terminal's recorder does.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { DaemonService } from "@wap/api";
import * as z from "zod";
import { appendAudit, type RequestFacts } from "../audit/record.js";
import { FailedPreconditionError, NotFoundError, UnauthenticatedError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { RecordingRecord } from "../storage/recordings.js";
import { type Repositories, UniqueViolationError } from "../storage/storage.js";
import { uuid } from "../validation/rules.js";
import { recordingBytesOf } from "../workspaces/quotas.js";
import { recordingCompleteResource } from "./recorder.js";

export const sshRecordingLimits = {
  /** The most one append carries. */
  appendBytes: 64 * 1024,
} as const;

const offsetOf = z
  .bigint()
  .refine((value) => value >= 0n, { message: "must be >= 0" })
  .transform((value) => Number(value));

async function sha256Of(repos: Repositories, workspaceId: string, id: string): Promise<string> {
  const hash = createHash("sha256");
  let afterSeq: number | undefined;
  for (;;) {
    const chunks = await repos.recordings.scanChunks(workspaceId, id, {
      ...(afterSeq !== undefined && { afterSeq }),
      limit: 64,
    });
    for (const chunk of chunks) hash.update(chunk.data);
    if (chunks.length < 64) return hash.digest("hex");
    afterSeq = chunks[chunks.length - 1]!.seq;
  }
}

async function completeRecording(
  services: Services,
  recording: RecordingRecord,
  subjectType: "user" | "service_account",
  request: RequestFacts,
): Promise<void> {
  const { workspaceId, id, userId, targetId } = recording;
  const at = services.clock.now();
  await services.storage.transaction(async (tx) => {
    const completed = await tx.recordings.complete(workspaceId, id, at);
    if (completed === null) return;
    await appendAudit(tx, services, request, {
      workspaceId,
      actorType: subjectType,
      actorId: userId,
      action: "recording.complete",
      resource: recordingCompleteResource({
        id,
        sha256: await sha256Of(tx, workspaceId, id),
        bytes: completed.sizeBytes,
        truncated: completed.truncated,
        targetId,
      }),
      at,
    });
  });
}

export const appendSshRecording = defineOperation({
  method: DaemonService.method.appendSSHRecording,
  access: { kind: "caller", callers: ["daemon"] },
  input: z.object({
    sessionId: uuid,
    offset: offsetOf,
    data: z.instanceof(Uint8Array).refine((bytes) => bytes.byteLength <= sshRecordingLimits.appendBytes, {
      message: `at most ${sshRecordingLimits.appendBytes} bytes`,
    }),
    final: z.boolean().optional(),
  }),
  async run({ input, services, ctx }) {
    if (ctx.caller.kind !== "daemon") throw new UnauthenticatedError("this call is for daemons");
    const { workspaceId, daemonId } = ctx.caller;
    const storage = services.storage;
    const login = await storage.sshSessions.findById(workspaceId, input.sessionId);
    if (!login || login.daemonId !== daemonId) {
      throw new NotFoundError(`session ${input.sessionId} not found`, { reason: "SESSION_NOT_FOUND" });
    }
    if (!login.recorded) {
      throw new FailedPreconditionError("this login is not recorded (its daemon did not record sessions)", {
        reason: "RECORDING_NOT_EXPECTED",
      });
    }
    let recording = await storage.recordings.findById(workspaceId, login.id);
    if (!recording) {
      const daemon = await storage.daemons.findById(workspaceId, daemonId);
      recording = {
        id: login.id,
        workspaceId,
        daemonId,
        targetId: daemon?.targetId ?? null,
        username: login.username,
        userId: login.subjectId,
        format: "asciicast-v2",
        sizeBytes: 0,
        chunkCount: 0,
        complete: false,
        truncated: false,
        startedAt: login.startedAt,
        endedAt: null,
      };
      // A concurrent first append may win: the loser reads what it wrote.
      await storage.recordings.insert(recording).catch((error: unknown) => {
        if (!(error instanceof UniqueViolationError)) throw error;
      });
      recording = (await storage.recordings.findById(workspaceId, login.id)) ?? recording;
    }
    const size = recording.sizeBytes;
    if (input.offset > size) {
      throw new FailedPreconditionError(`the recording holds ${size} bytes: append from offset ${size}`, {
        reason: "RECORDING_OFFSET",
      });
    }
    const fresh = input.data.subarray(Math.min(input.data.byteLength, size - input.offset));
    let stored = recording;
    if (fresh.byteLength > 0 && !recording.complete && !recording.truncated) {
      const used = await recordingBytesOf(storage, workspaceId);
      const room = Math.min(
        services.config.recordingMaxBytes - size,
        services.config.workspaceMaxRecordingBytes - used,
      );
      const truncated = fresh.byteLength > room;
      const data = truncated ? new Uint8Array(0) : fresh;
      await storage.transaction(async (tx) => {
        await tx.recordings.appendChunk(
          workspaceId,
          login.id,
          { seq: recording!.chunkCount, data },
          { truncated },
        );
      });
      stored = (await storage.recordings.findById(workspaceId, login.id)) ?? recording;
    }
    if (input.final && !stored.complete) await completeRecording(services, stored, login.subjectType, ctx);
    return { size: BigInt(stored.sizeBytes), truncated: stored.truncated };
  },
});

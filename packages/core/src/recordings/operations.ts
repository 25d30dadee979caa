/**
 * RecordingService: ListRecordings, GetRecording (a server stream) and DeleteRecording.
 * Recordings are made by the server's relay (recorder.ts), never uploaded.
 *
 * Who may do what (like CloseSession: `sessions.read` lets a caller at its own, a stronger
 * permission at everyone's):
 * - `recordings.read` (owners and admins) lists and plays back every recording of the workspace;
 * - every other member, and a service account (all hold `sessions.read`), lists and plays back
 *   only the recordings of sessions run for itself. Anyone else's answer `not_found`, exactly as an unknown id does,
 *   and the list leaves them out (total and totalBytes included);
 * - `recordings.delete` (owners and admins) deletes any recording; nobody deletes their own
 *   otherwise, since a recording is part of the audit trail. Each deletion is audited
 *   (`recording.delete`).
 *
 * Each recording says what it recorded: `kind` (`terminal`, or an SSH login's `shell`, `exec` or
 * `subsystem`, with its command and client address), and today's names of its subject and daemon.
 *
 * GetRecording sends the recording's metadata, then its file in chunks of at most 64 KiB, read
 * from storage in keyset pages, so a recording is never held whole. The stream carries the
 * file as it was when the call began: `meta.sizeBytes` is exactly the length of the chunks
 * that follow, even while the session is still being recorded.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type RecordingSchema, RecordingService } from "@wap/api";
import * as z from "zod";
import { type ConditionalPermission, holds } from "../access/conditional.js";
import { appendAudit } from "../audit/record.js";
import { actorOf, type CallContext } from "../context.js";
import { NotFoundError, PermissionDeniedError } from "../errors.js";
import { defineStreamingOperation } from "../events/streaming-operation.js";
import { defineOperation, type WorkspaceScope } from "../operations/operation.js";
import type { RecordingRecord } from "../storage/recordings.js";
import type { Repositories } from "../storage/storage.js";
import { principalUsername } from "../validation/bounds.js";
import { defaultPage, paging, uuid } from "../validation/rules.js";
import { recordingChunkBytes } from "./recorder.js";

/** What a listing says of each recording beyond its record: what it was, whose, where. */
interface RecordingContext {
  readonly kind: string;
  readonly subjectName: string;
  readonly daemonName: string;
  readonly command: string;
  readonly clientAddress: string;
}

/** The context of each recording, looking each subject and daemon up once. */
async function contextsOf(
  storage: Repositories,
  workspaceId: string,
  recordings: readonly RecordingRecord[],
): Promise<RecordingContext[]> {
  const names = new Map<string, Promise<string>>();
  const nameOf = (key: string, lookup: () => Promise<{ name: string } | null>) => {
    let found = names.get(key);
    if (!found) {
      found = lookup().then((named) => named?.name ?? "");
      names.set(key, found);
    }
    return found;
  };
  return Promise.all(
    recordings.map(async (recording) => {
      const login = await storage.sshSessions.findById(workspaceId, recording.id);
      const subjectName = await nameOf(`subject:${recording.userId}`, async () =>
        login?.subjectType === "service_account"
          ? storage.serviceAccounts.findById(workspaceId, recording.userId)
          : ((await storage.users.findById(recording.userId)) ??
            (await storage.serviceAccounts.findById(workspaceId, recording.userId))),
      );
      const daemonName = await nameOf(`daemon:${recording.daemonId}`, () =>
        storage.daemons.findById(workspaceId, recording.daemonId),
      );
      return {
        kind: login?.kind ?? "terminal",
        subjectName,
        daemonName,
        command: login?.command ?? "",
        clientAddress: login?.clientAddress ?? "",
      };
    }),
  );
}

/** Chunks read per storage round trip while streaming (at most 1 MiB). */
const chunkPageSize = 16;

export function toRecordingMessage(
  recording: RecordingRecord,
  context?: RecordingContext,
): MessageInitShape<typeof RecordingSchema> {
  return {
    ...context,
    id: recording.id,
    workspaceId: recording.workspaceId,
    daemonId: recording.daemonId,
    targetId: recording.targetId ?? "",
    username: recording.username,
    userId: recording.userId,
    format: recording.format,
    sizeBytes: BigInt(recording.sizeBytes),
    complete: recording.complete,
    truncated: recording.truncated,
    startedAt: timestampFromDate(recording.startedAt),
    ...(recording.endedAt && { endedAt: timestampFromDate(recording.endedAt) }),
  };
}

const notFound = (id: string) =>
  new NotFoundError(`recording ${id} not found`, { reason: "RECORDING_NOT_FOUND" });

/** The user or service-account id whose own recordings the caller may see. */
function subjectOf(ctx: CallContext): string {
  const caller = ctx.caller;
  if (caller.kind === "user") return caller.userId;
  if (caller.kind === "service_account") return caller.serviceAccountId;
  throw new PermissionDeniedError("recordings are read by users and service accounts");
}

/** Without it a caller sees only the recordings of their own sessions. */
const everyonesRecordings: ConditionalPermission = {
  permission: "recordings.read",
  when: "to see others' recordings (without it: one's own)",
};

/** Undefined when the caller sees every recording; otherwise the subject whose own it sees. */
function ownerFilter(workspace: WorkspaceScope, ctx: CallContext): string | undefined {
  return holds(workspace.role, everyonesRecordings) ? undefined : subjectOf(ctx);
}

/** The recording, if the caller may read it; `not_found` alike for unknown and not theirs. */
async function findReadable(
  repos: Repositories,
  workspace: WorkspaceScope,
  ctx: CallContext,
  id: string,
): Promise<RecordingRecord> {
  const recording = await repos.recordings.findById(workspace.workspaceId, id);
  const owner = ownerFilter(workspace, ctx);
  if (!recording || (owner !== undefined && recording.userId !== owner)) throw notFound(id);
  return recording;
}

export const listRecordings = defineOperation({
  method: RecordingService.method.listRecordings,
  // Every member may ask (as for their sessions); what they see depends on recordings.read.
  access: { kind: "workspace", permission: "sessions.read", conditions: [everyonesRecordings] },
  input: z.object({
    workspaceId: uuid.optional(),
    ...paging,
    daemonId: uuid.optional(),
    username: principalUsername.optional(),
  }),
  async run({ input, workspace, services, ctx }) {
    const userId = ownerFilter(workspace, ctx);
    const page = await services.storage.recordings.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.daemonId !== undefined && { daemonId: input.daemonId }),
      ...(input.username !== undefined && { username: input.username }),
      ...(userId !== undefined && { userId }),
    });
    return {
      recordings: await contextsOf(services.storage, workspace.workspaceId, page.items).then((contexts) =>
        page.items.map((recording, i) => toRecordingMessage(recording, contexts[i])),
      ),
      total: page.total,
      totalBytes: BigInt(page.totalBytes),
    };
  },
});

export const getRecording = defineStreamingOperation({
  method: RecordingService.method.getRecording,
  access: { kind: "workspace", permission: "sessions.read", conditions: [everyonesRecordings] },
  input: z.object({ workspaceId: uuid.optional(), recordingId: uuid }),
  async *run({ input, workspace, services, ctx, ready }) {
    const storage = services.storage;
    const recording = await findReadable(storage, workspace, ctx, input.recordingId);
    // Watching a session is access to what it showed: every playback is in the audit log.
    const { actorType, actorId } = actorOf(ctx.caller);
    await storage.transaction((tx) =>
      appendAudit(tx, services, ctx, {
        workspaceId: workspace.workspaceId,
        actorType,
        actorId,
        action: "recording.play",
        resource: `recording:${recording.id}`,
        at: services.clock.now(),
      }),
    );
    ready();
    const [context] = await contextsOf(storage, workspace.workspaceId, [recording]);
    yield { msg: { case: "meta" as const, value: toRecordingMessage(recording, context) } };
    let afterSeq: number | undefined;
    let sent = 0;
    while (sent < recording.chunkCount) {
      if (ctx.signal?.aborted) return;
      const limit = Math.min(chunkPageSize, recording.chunkCount - sent);
      const chunks = await storage.recordings.scanChunks(workspace.workspaceId, recording.id, {
        ...(afterSeq !== undefined && { afterSeq }),
        limit,
      });
      // Fewer chunks than the metadata promised: it was deleted while being read.
      if (chunks.length === 0) throw notFound(recording.id);
      for (const chunk of chunks) {
        for (let offset = 0; offset < chunk.data.byteLength; offset += recordingChunkBytes) {
          yield {
            msg: { case: "chunk" as const, value: chunk.data.subarray(offset, offset + recordingChunkBytes) },
          };
        }
        afterSeq = chunk.seq;
        sent++;
      }
    }
  },
});

export const deleteRecording = defineOperation({
  method: RecordingService.method.deleteRecording,
  access: { kind: "workspace", permission: "recordings.delete" },
  input: z.object({ workspaceId: uuid.optional(), recordingId: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.recordings.delete(workspace.workspaceId, input.recordingId))) {
        throw notFound(input.recordingId);
      }
      await audit(tx, { action: "recording.delete", resource: `recording:${input.recordingId}` });
    });
    return {};
  },
});

/** The unary RecordingService operations (GetRecording is in {@link recordingStreamingOperations}). */
export const recordingOperations = [listRecordings, deleteRecording];

/** The streaming RecordingService operations. */
export const recordingStreamingOperations = [getRecording];

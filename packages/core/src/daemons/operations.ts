/**
 * DaemonService, management half: get, list, update (status and config) and delete enrolled
 * agent daemons. Enrolment, sync and sessions are in enrollment.ts, sync.ts and ../sessions.
 *
 * Status transitions: PENDING -> ACCEPTED or REJECTED; ACCEPTED <-> REJECTED (an admin may change
 * their mind); nothing goes back to PENDING, which means "never decided". After commit the
 * daemon hears of it (see `statusChangeEvents`); a rejection also closes its sessions.
 *
 * DeleteDaemon (by an administrator, or by the daemon itself with no ids) closes its sessions,
 * ends its streams (`deleted` on its topic) and detaches its target, which keeps its grants.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type DaemonSchema, DaemonService, DaemonStatus, DaemonStatusSchema } from "@wap/api";
import * as z from "zod";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { DaemonSessionRecord } from "../storage/daemon-sessions.js";
import type { DaemonRecord, DaemonStatusValue } from "../storage/daemons.js";
import { defaultPage, enumValue, paging, text, uuid } from "../validation/rules.js";
import { closeEvent, daemonTopic, notify, publishCommitted, type TopicEvent } from "./events.js";

export const statusToWire: Record<DaemonStatusValue, DaemonStatus> = {
  pending: DaemonStatus.PENDING,
  accepted: DaemonStatus.ACCEPTED,
  rejected: DaemonStatus.REJECTED,
};
const statusFromWire = new Map<number, DaemonStatusValue>(
  Object.entries(statusToWire).map(([name, value]) => [value, name as DaemonStatusValue]),
);

export function toDaemonMessage(daemon: DaemonRecord): MessageInitShape<typeof DaemonSchema> {
  return {
    id: daemon.id,
    workspaceId: daemon.workspaceId,
    name: daemon.name,
    online: daemon.onlineSince !== null,
    status: statusToWire[daemon.status],
    config: { recordSessions: daemon.recordSessions, requireRecording: daemon.requireRecording ?? false },
    metadata: { ...daemon.metadata },
    createdAt: timestampFromDate(daemon.createdAt),
    updatedAt: timestampFromDate(daemon.updatedAt),
  };
}

const notFound = (id: string) => new NotFoundError(`daemon ${id} not found`);

/** Which status changes an administrator may make. */
export function canMoveDaemon(from: DaemonStatusValue, to: DaemonStatusValue): boolean {
  return from === to || to !== "pending";
}

/** A daemon acting on itself may leave the ids out (the agent sends none). */
function targetDaemonId(id: string | undefined, caller: { kind: string; daemonId?: string }): string {
  if (id !== undefined) return id;
  if (caller.kind === "daemon" && caller.daemonId) return caller.daemonId;
  throw new InvalidArgumentError("invalid request: id: is required", {
    violations: [{ field: "id", description: "is required" }],
  });
}

/**
 * What a daemon hears when an administrator decides, after commit: the
 * relays of the sessions a rejection closed hear `close`; an acceptance, or a config change of a
 * daemon that is not rejected, asks it to sync (the only way the agent picks up principals, config and
 * certificates); a rejection is `STATUS REJECTED`, last, so no other notification replaces it
 * in the daemon's one-slot queue.
 */
export function statusChangeEvents(
  before: DaemonRecord,
  after: DaemonRecord,
  closedSessions: readonly DaemonSessionRecord[],
): TopicEvent[] {
  const events: TopicEvent[] = closedSessions.map((session) => closeEvent(session.id, session.closeReason));
  if (after.status === "rejected") {
    if (before.status !== "rejected") events.push(notify(after.id, "STATUS", "REJECTED"));
    return events;
  }
  const accepted = after.status === "accepted" && before.status !== "accepted";
  const configChanged =
    after.recordSessions !== before.recordSessions ||
    (after.requireRecording ?? false) !== (before.requireRecording ?? false);
  // Acceptance needs a host certificate; a config change only a sync (no new certificate, so
  // no sshd reload).
  if (accepted) events.push(notify(after.id, "SYNC_REQUEST"));
  else if (configChanged) events.push(notify(after.id, "PRINCIPALS"));
  return events;
}

export const getDaemon = defineOperation({
  method: DaemonService.method.getDaemon,
  access: { kind: "workspace", permission: "daemons.read" },
  input: z.object({ workspaceId: uuid.optional(), id: uuid }),
  async run({ input, workspace, services }) {
    const daemon = await services.storage.daemons.findById(workspace.workspaceId, input.id);
    if (!daemon) throw notFound(input.id);
    return { daemon: toDaemonMessage(daemon) };
  },
});

export const listDaemons = defineOperation({
  method: DaemonService.method.listDaemons,
  access: { kind: "workspace", permission: "daemons.read" },
  input: z.object({
    workspaceId: uuid.optional(),
    ...paging,
    query: text({ max: 256 }).optional(),
    online: z.boolean().optional(),
    status: z.number().optional(),
  }),
  async run({ input, workspace, services }) {
    const status = input.status === undefined ? undefined : statusFromWire.get(input.status);
    const page = await services.storage.daemons.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.query && { query: input.query }),
      ...(input.online !== undefined && { online: input.online }),
      ...(status && { status }),
    });
    return { daemons: page.items.map(toDaemonMessage), total: page.total };
  },
});

export const updateDaemon = defineOperation({
  method: DaemonService.method.updateDaemon,
  access: { kind: "workspace", permission: "daemons.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    status: enumValue(DaemonStatusSchema, { definedOnly: true, notUnspecified: true }).optional(),
    config: z
      .object({ recordSessions: z.boolean().optional(), requireRecording: z.boolean().optional() })
      .optional(),
  }),
  async run({ input, workspace, services, now, audit }) {
    const events = await services.storage.transaction(async (tx) => {
      const daemon = await tx.daemons.findById(workspace.workspaceId, input.id);
      if (!daemon) throw notFound(input.id);
      const status = input.status === undefined ? undefined : statusFromWire.get(input.status);
      if (status && !canMoveDaemon(daemon.status, status)) {
        throw new FailedPreconditionError(`a daemon cannot go from ${daemon.status} back to ${status}`, {
          reason: "DAEMON_STATUS_TRANSITION",
        });
      }
      const updated = await tx.daemons.update(
        workspace.workspaceId,
        input.id,
        {
          ...(status && { status }),
          ...(input.config?.recordSessions !== undefined && { recordSessions: input.config.recordSessions }),
          ...(input.config?.requireRecording !== undefined && {
            requireRecording: input.config.requireRecording,
          }),
        },
        now,
      );
      // A rejected daemon keeps no terminal open.
      const closed =
        status === "rejected" && daemon.status !== "rejected"
          ? await tx.daemonSessions.closeAllForDaemon(
              workspace.workspaceId,
              input.id,
              "the daemon was rejected",
              now,
            )
          : [];
      await audit(tx, { action: "daemon.update", resource: `daemon:${input.id}` });
      return statusChangeEvents(daemon, updated ?? daemon, closed);
    });
    await publishCommitted(services, events);
    return {};
  },
});

export const deleteDaemon = defineOperation({
  method: DaemonService.method.deleteDaemon,
  access: { kind: "workspace", permission: "daemons.manage", callers: ["user", "service_account", "daemon"] },
  input: z.object({ workspaceId: uuid.optional(), id: uuid.optional() }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const id = targetDaemonId(input.id, ctx.caller as { kind: string; daemonId?: string });
    if (ctx.caller.kind === "daemon" && ctx.caller.daemonId !== id) {
      throw notFound(id);
    }
    const closed = await services.storage.transaction(async (tx) => {
      const daemon = await tx.daemons.findById(workspace.workspaceId, id);
      if (!daemon) throw notFound(id);
      const sessions = await tx.daemonSessions.closeAllForDaemon(
        workspace.workspaceId,
        id,
        "the daemon was deleted",
        now,
      );
      // The target stays, with its grants, for the machine to be enrolled again or deleted.
      if (daemon.targetId !== null) {
        await tx.targets.update(workspace.workspaceId, daemon.targetId, { daemonId: null }, now);
      }
      if (!(await tx.daemons.delete(workspace.workspaceId, id))) throw notFound(id);
      await audit(tx, { action: "daemon.delete", resource: `daemon:${id}` });
      return sessions;
    });
    // Its streams end: its credentials no longer work.
    await publishCommitted(services, [
      ...closed.map((session) => closeEvent(session.id, session.closeReason)),
      { topic: daemonTopic(id), payload: { kind: "deleted" } },
    ]);
    return {};
  },
});

export const daemonOperations = [getDaemon, listDaemons, updateDaemon, deleteDaemon];

/**
 * DaemonService, management half: get, list, update (status and config) and delete enrolled
 * agent daemons. Enrollment, sync and the streams come with the daemon protocol.
 *
 * Status transitions: PENDING -> ACCEPTED or REJECTED; ACCEPTED <-> REJECTED (an admin may change
 * their mind); nothing goes back to PENDING, which means "never decided".
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import * as z from "zod";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../errors.js";
import {
  type DaemonSchema,
  DaemonService,
  DaemonStatus,
  DaemonStatusSchema,
} from "../gen/platform/v1/daemon_pb.js";
import { defineOperation } from "../operations/operation.js";
import type { DaemonRecord, DaemonStatusValue } from "../storage/records.js";
import { defaultPage, enumValue, paging, text, uuid } from "../validation/rules.js";

const statusToWire: Record<DaemonStatusValue, DaemonStatus> = {
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
    config: { recordSessions: daemon.recordSessions },
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
    config: z.object({ recordSessions: z.boolean().optional() }).optional(),
  }),
  async run({ input, workspace, services, now, audit }) {
    await services.storage.transaction(async (tx) => {
      const daemon = await tx.daemons.findById(workspace.workspaceId, input.id);
      if (!daemon) throw notFound(input.id);
      const status = input.status === undefined ? undefined : statusFromWire.get(input.status);
      if (status && !canMoveDaemon(daemon.status, status)) {
        throw new FailedPreconditionError(`a daemon cannot go from ${daemon.status} back to ${status}`, {
          reason: "DAEMON_STATUS_TRANSITION",
        });
      }
      await tx.daemons.update(
        workspace.workspaceId,
        input.id,
        {
          ...(status && { status }),
          ...(input.config?.recordSessions !== undefined && { recordSessions: input.config.recordSessions }),
        },
        now,
      );
      await audit(tx, { action: "daemon.update", resource: `daemon:${input.id}` });
    });
    return {};
  },
});

export const deleteDaemon = defineOperation({
  method: DaemonService.method.deleteDaemon,
  access: { kind: "workspace", permission: "daemons.manage", callers: ["user", "service_account", "daemon"] },
  input: z.object({ workspaceId: uuid.optional(), id: uuid.optional() }),
  async run({ input, workspace, services, audit, ctx }) {
    const id = targetDaemonId(input.id, ctx.caller as { kind: string; daemonId?: string });
    if (ctx.caller.kind === "daemon" && ctx.caller.daemonId !== id) {
      throw notFound(id);
    }
    await services.storage.transaction(async (tx) => {
      if (!(await tx.daemons.delete(workspace.workspaceId, id))) throw notFound(id);
      await audit(tx, { action: "daemon.delete", resource: `daemon:${id}` });
    });
    return {};
  },
});

export const daemonOperations = [getDaemon, listDaemons, updateDaemon, deleteDaemon];

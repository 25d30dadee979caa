/**
 * TargetService: machines reachable through the platform. A target trusts one SSH certificate
 * authority of its workspace (`caId`; the workspace's default SSH authority when left out), has
 * endpoints (`host:port` as daemons report them), tags, and principals (PrincipalService).
 * Names follow the resource-name pattern and are unique in a workspace. A target a daemon serves
 * is not deleted (delete the daemon first); deleting a target removes its principals and grants.
 *
 * @module
 */

import { TargetService } from "@wap/api";
import * as z from "zod";
import { defaultAuthority } from "../certificates/default-authority.js";
import { sameEndpoints } from "../certificates/host-names.js";
import { authorityMessage } from "../certificates/messages.js";
import { actorOf } from "../context.js";
import { toDaemonMessage } from "../daemons/operations.js";
import { AlreadyExistsError, FailedPreconditionError, NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import { targetNotFound } from "../principals/not-found.js";
import { findSubject } from "../principals/subjects.js";
import { type Repositories, UniqueViolationError } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";
import { description, endpoint, endpointLimits, resourceName, tagLimits } from "../validation/bounds.js";
import { defaultPage, paging, text, uuid } from "../validation/rules.js";
import { assertWithinQuota } from "../workspaces/quotas.js";
import { toTargetMessage } from "./messages.js";
import { subjectAccess } from "./subject-access.js";

const workspaceId = uuid.optional();
const tags = z
  .array(text({ min: 1, max: tagLimits.length }))
  .max(tagLimits.count, `at most ${tagLimits.count} tags`);
const endpoints = z.array(endpoint).max(endpointLimits.count, `at most ${endpointLimits.count} endpoints`);

const nameTaken = (name: string) =>
  new AlreadyExistsError(`a target named '${name}' already exists in this workspace`, {
    reason: "TARGET_NAME_TAKEN",
  });

/** The SSH authority a target will trust: the one named, else the workspace's default. */
async function trustedAuthority(
  repos: Repositories,
  workspaceId: string,
  caId: string | undefined,
): Promise<string> {
  if (caId === undefined) {
    const fallback = await defaultAuthority(repos, workspaceId, "ssh", {
      reason: "NO_DEFAULT_SSH_CA",
      nameOne: "name one (caId)",
    });
    return fallback.id;
  }
  const ca = await repos.certificateAuthorities.findById(workspaceId, caId);
  if (!ca) throw new NotFoundError(`certificate authority ${caId} not found`, { reason: "CA_NOT_FOUND" });
  if (ca.authorityType !== "ssh") {
    throw new FailedPreconditionError(
      `certificate authority ${caId} is an X.509 authority; targets trust SSH authorities`,
      {
        reason: "CA_NOT_SSH",
      },
    );
  }
  return ca.id;
}

async function withPrincipals(repos: Repositories, target: TargetRecord) {
  return toTargetMessage(target, await repos.principals.listByTargets(target.workspaceId, [target.id]));
}

export const getTarget = defineOperation({
  method: TargetService.method.getTarget,
  access: { kind: "workspace", permission: "targets.read" },
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services }) {
    const target = await services.storage.targets.findById(workspace.workspaceId, input.id);
    if (!target) throw targetNotFound(input.id);
    return { target: await withPrincipals(services.storage, target) };
  },
});

export const listTargets = defineOperation({
  method: TargetService.method.listTargets,
  access: { kind: "workspace", permission: "targets.read" },
  input: z.object({
    workspaceId,
    ...paging,
    query: text({ max: 256 }).optional(),
    // Filters with no uuid rule in the contract: a value that is no id simply matches nothing.
    daemonId: text({ max: 64 }).optional(),
    caId: text({ max: 64 }).optional(),
    principals: z.array(text({ max: 64 })).max(100, "at most 100 usernames"),
    tags: z.array(text({ max: tagLimits.length })).max(tagLimits.count, `at most ${tagLimits.count} tags`),
  }),
  async run({ input, workspace, services }) {
    const page = await services.storage.targets.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.query && { query: input.query }),
      ...(input.daemonId && { daemonId: input.daemonId.toLowerCase() }),
      ...(input.caId && { caId: input.caId.toLowerCase() }),
      ...(input.principals.length > 0 && { principals: input.principals }),
      ...(input.tags.length > 0 && { tags: input.tags }),
    });
    const principals = await services.storage.principals.listByTargets(
      workspace.workspaceId,
      page.items.map((t) => t.id),
    );
    return { targets: page.items.map((t) => toTargetMessage(t, principals)), total: page.total };
  },
});

export const createTarget = defineOperation({
  method: TargetService.method.createTarget,
  access: { kind: "workspace", permission: "targets.manage" },
  input: z.object({
    workspaceId,
    caId: uuid.optional(),
    name: resourceName,
    description: description.optional(),
    endpoints,
    tags,
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      const target = await services.storage.transaction(async (tx) => {
        const record: TargetRecord = {
          id: services.random.uuid(),
          workspaceId: workspace.workspaceId,
          caId: await trustedAuthority(tx, workspace.workspaceId, input.caId),
          daemonId: null,
          name: input.name,
          description: input.description ?? "",
          tags: input.tags,
          endpoints: input.endpoints,
          metadata: {},
          createdAt: now,
          updatedAt: now,
        };
        await assertWithinQuota(tx, services.config, workspace.workspaceId, "targets");
        await tx.targets.insert(record);
        await audit(tx, { action: "target.create", resource: `target:${record.id}` });
        return record;
      });
      return { target: toTargetMessage(target, []) };
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name);
      throw error;
    }
  },
});

export const updateTarget = defineOperation({
  method: TargetService.method.updateTarget,
  notifiesDaemons: ["target"],
  access: { kind: "workspace", permission: "targets.manage" },
  input: z.object({
    workspaceId,
    id: uuid,
    caId: uuid.optional(),
    name: resourceName.optional(),
    description: description.optional(),
    endpoints,
    tags,
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      const target = await services.storage.transaction(async (tx) => {
        const current = await tx.targets.findById(workspace.workspaceId, input.id);
        if (!current) throw targetNotFound(input.id);
        const caId =
          input.caId === undefined
            ? undefined
            : await trustedAuthority(tx, workspace.workspaceId, input.caId);
        const updated = await tx.targets.update(
          workspace.workspaceId,
          input.id,
          {
            ...(caId !== undefined && { caId }),
            ...(input.name !== undefined && { name: input.name }),
            ...(input.description !== undefined && { description: input.description }),
            // Lists have no presence on the wire: an empty list leaves them as they are. Endpoints
            // set to what the daemon reported approve its report.
            ...(input.endpoints.length > 0 && {
              endpoints: input.endpoints,
              reportedEndpoints: sameEndpoints(current.reportedEndpoints ?? [], input.endpoints)
                ? []
                : (current.reportedEndpoints ?? []),
            }),
            ...(input.tags.length > 0 && { tags: input.tags }),
          },
          now,
        );
        if (!updated) throw targetNotFound(input.id);
        await audit(tx, { action: "target.update", resource: `target:${input.id}` });
        return updated;
      });
      return { target: await withPrincipals(services.storage, target) };
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name ?? "");
      throw error;
    }
  },
});

export const deleteTarget = defineOperation({
  method: TargetService.method.deleteTarget,
  access: { kind: "workspace", permission: "targets.manage" },
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      const target = await tx.targets.findById(workspace.workspaceId, input.id);
      if (!target) throw targetNotFound(input.id);
      const daemons = await tx.targets.daemonsOf(workspace.workspaceId, [input.id]);
      if (daemons.length > 0) {
        throw new FailedPreconditionError(
          `target ${input.id} is served by daemon ${daemons[0]?.id}: delete the daemon first`,
          { reason: "TARGET_HAS_DAEMON" },
        );
      }
      await tx.targets.delete(workspace.workspaceId, input.id);
      await audit(tx, { action: "target.delete", resource: `target:${input.id}` });
    });
    return {};
  },
});

export const getSubjectAccess = defineOperation({
  method: TargetService.method.getSubjectAccess,
  // Every member may ask what they themselves can reach (the CLI does, for each workspace).
  access: { kind: "workspace", permission: "targets.read" },
  input: z.object({ workspaceId, subjectId: uuid.optional() }),
  async run({ input, workspace, services, ctx }) {
    const subjectId = input.subjectId ?? actorOf(ctx.caller).actorId;
    const subject = await findSubject(services.storage, workspace.workspaceId, subjectId);
    if (!subject) throw new NotFoundError(`subject ${subjectId} not found`, { reason: "SUBJECT_NOT_FOUND" });
    const access = await subjectAccess(services.storage, workspace.workspaceId, subject);
    return {
      targets: access.targets.map((t) => toTargetMessage(t, access.principals)),
      daemons: access.daemons.map(toDaemonMessage),
      certificateAuthorities: await Promise.all(
        access.authorities.map((ca) => authorityMessage(services, services.storage, ca)),
      ),
    };
  },
});

export const getTargetFilters = defineOperation({
  method: TargetService.method.getTargetFilters,
  access: { kind: "workspace", permission: "targets.read" },
  input: z.object({ workspaceId }),
  async run({ workspace, services }) {
    const [tags, principals] = await Promise.all([
      services.storage.targets.tags(workspace.workspaceId),
      services.storage.principals.usernames(workspace.workspaceId),
    ]);
    return { tags, principals };
  },
});

export const targetOperations = [
  getTarget,
  listTargets,
  createTarget,
  updateTarget,
  deleteTarget,
  getSubjectAccess,
  getTargetFilters,
];

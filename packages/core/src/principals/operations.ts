/**
 * PrincipalService: access grants. A principal is a Unix login name on a target; its subjects
 * (users, teams, service accounts of the workspace) may log in as it. SetPrincipals replaces a
 * target's usernames (a username kept keeps its grants); grants are added and removed per
 * subject kind; RevokeAllAccess takes one subject off every principal of the workspace.
 *
 * @module
 */

import { PrincipalService, PrincipalTypeSchema } from "@wap/api";
import * as z from "zod";
import { NotFoundError, PlatformError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { SubjectKind } from "../storage/principals.js";
import { UniqueViolationError } from "../storage/storage.js";
import { principalsPerTarget, principalUsername, subjectIdCount } from "../validation/bounds.js";
import { defaultPage, enumValue, paging, text, uuid } from "../validation/rules.js";
import { refuseStepUpForServiceAccounts } from "./grant-limits.js";
import { grantTermsInput, termsOf } from "./grant-terms.js";
import { targetNotFound } from "./not-found.js";
import { subjectExists, subjectKindFromWire, subjectNotFound, toPrincipalMessage } from "./subjects.js";

const workspaceId = uuid.optional();
const subjectType = enumValue(PrincipalTypeSchema, { definedOnly: true, notUnspecified: true }).transform(
  (value) => subjectKindFromWire.get(value) as SubjectKind,
);
const subjectIds = z
  .array(uuid)
  .min(subjectIdCount.min, `must have ${subjectIdCount.min} to ${subjectIdCount.max} items`)
  .max(subjectIdCount.max, `must have ${subjectIdCount.min} to ${subjectIdCount.max} items`);

const principalNotFound = (id: string) =>
  new NotFoundError(`principal ${id} not found`, { reason: "PRINCIPAL_NOT_FOUND" });

export const setPrincipals = defineOperation({
  method: PrincipalService.method.setPrincipals,
  notifiesDaemons: ["target"],
  access: { kind: "workspace", permission: "principals.manage" },
  input: z.object({
    workspaceId,
    targetId: uuid,
    usernames: z
      .array(principalUsername)
      .max(principalsPerTarget, `at most ${principalsPerTarget} usernames per target`)
      .superRefine((names, ctx) => {
        const seen = new Set<string>();
        names.forEach((name, index) => {
          if (seen.has(name))
            ctx.addIssue({ code: "custom", path: [index], message: `'${name}' is listed twice` });
          seen.add(name);
        });
      }),
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      await services.storage.transaction(async (tx) => {
        if (!(await tx.targets.findById(workspace.workspaceId, input.targetId))) {
          throw targetNotFound(input.targetId);
        }
        const existing = await tx.principals.listByTargets(workspace.workspaceId, [input.targetId]);
        const wanted = new Set(input.usernames);
        for (const p of existing) {
          if (!wanted.has(p.username)) await tx.principals.delete(workspace.workspaceId, p.id);
        }
        const kept = new Set(existing.map((p) => p.username));
        for (const username of input.usernames) {
          if (kept.has(username)) continue;
          await tx.principals.insert({
            id: services.random.uuid(),
            workspaceId: workspace.workspaceId,
            targetId: input.targetId,
            username,
            createdAt: now,
          });
        }
        await audit(tx, { action: "principal.set", resource: `target:${input.targetId}` });
      });
    } catch (error) {
      // Another SetPrincipals on the same target won the race for a username: ask to retry.
      if (error instanceof UniqueViolationError) {
        throw new PlatformError(
          "aborted",
          "the target's principals changed meanwhile; send the request again",
          {
            reason: "PRINCIPALS_CHANGED",
            cause: error,
          },
        );
      }
      throw error;
    }
    return {};
  },
});

export const listPrincipals = defineOperation({
  method: PrincipalService.method.listPrincipals,
  access: { kind: "workspace", permission: "principals.read" },
  input: z.object({
    workspaceId,
    targetId: uuid.optional(),
    ...paging,
    query: text({ max: 256 }).optional(),
    type: subjectType.optional(),
  }),
  async run({ input, workspace, services }) {
    const page = await services.storage.principals.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.targetId !== undefined && { targetId: input.targetId }),
      ...(input.query && { query: input.query }),
      ...(input.type !== undefined && { subjectKind: input.type }),
    });
    return { principals: page.items.map(toPrincipalMessage), total: page.total };
  },
});

export const addSubjectsToPrincipal = defineOperation({
  method: PrincipalService.method.addSubjectsToPrincipal,
  notifiesDaemons: ["principal_target"],
  access: { kind: "workspace", permission: "principals.manage" },
  input: z.object({ workspaceId, id: uuid, subjectIds, type: subjectType, ...grantTermsInput }),
  async run({ input, workspace, services, now, audit }) {
    refuseStepUpForServiceAccounts(input.type, input.limits);
    await services.storage.transaction(async (tx) => {
      if (!(await tx.principals.findById(workspace.workspaceId, input.id))) throw principalNotFound(input.id);
      for (const id of input.subjectIds) {
        if (!(await subjectExists(tx, workspace.workspaceId, { kind: input.type, id }))) {
          throw subjectNotFound(input.type, id);
        }
      }
      const terms = await termsOf(tx, workspace.workspaceId, input, now);
      await tx.principals.addSubjects(
        workspace.workspaceId,
        input.id,
        input.type,
        input.subjectIds,
        now,
        terms,
      );
      await audit(tx, { action: "principal.grant", resource: `principal:${input.id}` });
    });
    return {};
  },
});

export const removeSubjectsFromPrincipal = defineOperation({
  method: PrincipalService.method.removeSubjectsFromPrincipal,
  notifiesDaemons: ["principal_target"],
  access: { kind: "workspace", permission: "principals.manage" },
  input: z.object({ workspaceId, id: uuid, subjectIds, type: subjectType }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.principals.findById(workspace.workspaceId, input.id))) throw principalNotFound(input.id);
      // Removing a grant that is not there is not an error: the outcome is what was asked for.
      await tx.principals.removeSubjects(workspace.workspaceId, input.id, input.type, input.subjectIds);
      await audit(tx, { action: "principal.revoke", resource: `principal:${input.id}` });
    });
    return {};
  },
});

export const revokeAllAccess = defineOperation({
  method: PrincipalService.method.revokeAllAccess,
  notifiesDaemons: ["workspace"],
  access: { kind: "workspace", permission: "principals.manage" },
  input: z.object({ workspaceId, subjectId: uuid, type: subjectType }),
  async run({ input, workspace, services, audit }) {
    const subject = { kind: input.type, id: input.subjectId };
    await services.storage.transaction(async (tx) => {
      if (!(await subjectExists(tx, workspace.workspaceId, subject)))
        throw subjectNotFound(input.type, input.subjectId);
      await tx.principals.removeSubjectEverywhere(workspace.workspaceId, subject);
      await audit(tx, { action: "access.revoke_all", resource: `${input.type}:${input.subjectId}` });
    });
    return {};
  },
});

export const principalOperations = [
  setPrincipals,
  listPrincipals,
  addSubjectsToPrincipal,
  removeSubjectsFromPrincipal,
  revokeAllAccess,
];

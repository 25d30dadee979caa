/**
 * ServiceAccountService: non-human API clients of one workspace. The bearer token (a PASETO, see
 * `auth/service-account-tokens.ts`) is shown once, at creation, and kept only as a hash.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type ServiceAccountSchema, ServiceAccountService } from "@wap/api";
import * as z from "zod";
import { revokeSubjectCertificates } from "../certificates/revocation.js";
import { AlreadyExistsError, InvalidArgumentError, NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { ServiceAccountRecord, ServiceAccountRole } from "../storage/service-accounts.js";
import { UniqueViolationError } from "../storage/storage.js";
import { description, serviceAccountName, serviceAccountRoleName } from "../validation/bounds.js";
import { defaultPage, paging, text, timestamp, uuid } from "../validation/rules.js";
import { assertWithinQuota } from "../workspaces/quotas.js";

function toServiceAccountMessage(
  account: ServiceAccountRecord,
): MessageInitShape<typeof ServiceAccountSchema> {
  return {
    id: account.id,
    workspaceId: account.workspaceId,
    name: account.name,
    description: account.description,
    roleName: account.role,
    tags: [...account.tags],
    ...(account.expiresAt && { expiresAt: timestampFromDate(account.expiresAt) }),
    ...(account.lastUsedAt && { lastUsedAt: timestampFromDate(account.lastUsedAt) }),
    createdAt: timestampFromDate(account.createdAt),
    updatedAt: timestampFromDate(account.updatedAt),
  };
}

/** Empty means the default role, viewer: the least privilege. */
const roleOf = (name: string): ServiceAccountRole => (name === "editor" ? "editor" : "viewer");
const tag = text({ min: 1, max: 64 });
const tags = z.array(tag).max(50, "at most 50 tags");

const nameTaken = (name: string) =>
  new AlreadyExistsError(`a service account named '${name}' already exists in this workspace`, {
    reason: "SERVICE_ACCOUNT_NAME_TAKEN",
  });
const notFound = (id: string) => new NotFoundError(`service account ${id} not found`);

export const createServiceAccount = defineOperation({
  method: ServiceAccountService.method.createServiceAccount,
  access: { kind: "workspace", permission: "service_accounts.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    name: serviceAccountName,
    description: description.optional(),
    roleName: serviceAccountRoleName.optional(),
    tags,
    expiresAt: timestamp.optional(),
  }),
  async run({ input, workspace, services, now, audit }) {
    if (input.expiresAt && input.expiresAt <= now) {
      throw new InvalidArgumentError("invalid request: expiresAt: must be in the future", {
        violations: [{ field: "expiresAt", description: "must be in the future" }],
      });
    }
    const id = services.random.uuid();
    const { token, tokenHash } = await services.serviceAccountTokens.issue(
      { accountId: id, workspaceId: workspace.workspaceId, expiresAt: input.expiresAt ?? null },
      now,
      services.random,
    );
    const account: ServiceAccountRecord = {
      id,
      workspaceId: workspace.workspaceId,
      name: input.name,
      description: input.description ?? "",
      role: roleOf(input.roleName ?? ""),
      tags: input.tags,
      tokenHash,
      expiresAt: input.expiresAt ?? null,
      lastUsedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await services.storage.transaction(async (tx) => {
        await assertWithinQuota(tx, services.config, account.workspaceId, "serviceAccounts");
        await tx.serviceAccounts.insert(account);
        await audit(tx, { action: "service_account.create", resource: `service_account:${id}` });
      });
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name);
      throw error;
    }
    return { serviceAccount: toServiceAccountMessage(account), token };
  },
});

/** A service account may read itself without an id (the CLI's sync sends only the workspace). */
function resolveId(id: string | undefined, caller: { kind: string; serviceAccountId?: string }): string {
  if (id !== undefined) return id;
  if (caller.kind === "service_account" && caller.serviceAccountId) return caller.serviceAccountId;
  throw new InvalidArgumentError("invalid request: id: is required", {
    violations: [{ field: "id", description: "is required" }],
  });
}

export const getServiceAccount = defineOperation({
  method: ServiceAccountService.method.getServiceAccount,
  access: { kind: "workspace", permission: "service_accounts.read" },
  input: z.object({ workspaceId: uuid.optional(), id: uuid.optional() }),
  async run({ input, workspace, services, ctx }) {
    const id = resolveId(input.id, ctx.caller as { kind: string; serviceAccountId?: string });
    const account = await services.storage.serviceAccounts.findById(workspace.workspaceId, id);
    if (!account) throw notFound(id);
    return { serviceAccount: toServiceAccountMessage(account) };
  },
});

export const listServiceAccounts = defineOperation({
  method: ServiceAccountService.method.listServiceAccounts,
  access: { kind: "workspace", permission: "service_accounts.read" },
  input: z.object({
    workspaceId: uuid.optional(),
    ...paging,
    query: text({ max: 256 }).optional(),
    roleName: text({ max: 64 }).optional(),
    tags: z.array(text({ max: 64 })).max(50),
  }),
  async run({ input, workspace, services }) {
    const page = await services.storage.serviceAccounts.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.query && { query: input.query }),
      ...(input.roleName && { role: input.roleName }),
      ...(input.tags.length > 0 && { tags: input.tags }),
    });
    return { serviceAccounts: page.items.map(toServiceAccountMessage), total: page.total };
  },
});

export const updateServiceAccount = defineOperation({
  method: ServiceAccountService.method.updateServiceAccount,
  access: { kind: "workspace", permission: "service_accounts.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    id: uuid,
    name: serviceAccountName.optional(),
    description: description.optional(),
    roleName: serviceAccountRoleName.optional(),
    tags,
  }),
  async run({ input, workspace, services, now, audit }) {
    try {
      const updated = await services.storage.transaction(async (tx) => {
        const current = await tx.serviceAccounts.findById(workspace.workspaceId, input.id);
        if (!current) throw notFound(input.id);
        const result = await tx.serviceAccounts.update(
          workspace.workspaceId,
          input.id,
          {
            ...(input.name !== undefined && { name: input.name }),
            ...(input.description !== undefined && { description: input.description }),
            ...(input.roleName !== undefined && { role: roleOf(input.roleName) }),
            // Lists have no presence on the wire: an empty list leaves the tags as they are.
            ...(input.tags.length > 0 && { tags: input.tags }),
          },
          now,
        );
        await audit(tx, { action: "service_account.update", resource: `service_account:${input.id}` });
        return result ?? current;
      });
      return { serviceAccount: toServiceAccountMessage(updated) };
    } catch (error) {
      if (error instanceof UniqueViolationError) throw nameTaken(input.name ?? "");
      throw error;
    }
  },
});

export const deleteServiceAccount = defineOperation({
  method: ServiceAccountService.method.deleteServiceAccount,
  notifiesDaemons: ["workspace", "revocations"],
  access: { kind: "workspace", permission: "service_accounts.manage" },
  input: z.object({ workspaceId: uuid.optional(), id: uuid }),
  async run({ input, workspace, services, audit, now }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.serviceAccounts.delete(workspace.workspaceId, input.id))) throw notFound(input.id);
      await revokeSubjectCertificates(tx, audit, {
        workspaceId: workspace.workspaceId,
        subjectId: input.id,
        cause: "service_account.delete",
        now,
      });
      await audit(tx, { action: "service_account.delete", resource: `service_account:${input.id}` });
    });
    return {};
  },
});

export const serviceAccountOperations = [
  createServiceAccount,
  getServiceAccount,
  listServiceAccounts,
  updateServiceAccount,
  deleteServiceAccount,
];

/**
 * WorkspaceService: the tenant root. Create, get, list, update and delete (the creator becomes
 * the owner; deleting removes everything in the workspace in one transaction).
 *
 * @module
 */

import { WorkspaceService } from "@wap/api";
import * as z from "zod";
import { NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { WorkspaceRecord } from "../storage/workspaces.js";
import { description, workspaceName } from "../validation/bounds.js";
import { uuid } from "../validation/rules.js";
import { toWorkspaceMessage } from "./messages.js";

const workspaceId = uuid.optional();

export const createWorkspace = defineOperation({
  method: WorkspaceService.method.createWorkspace,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ name: workspaceName, description: description.optional() }),
  async run({ input, services, now, ctx, audit }) {
    const userId = ctx.caller.kind === "user" ? ctx.caller.userId : "";
    const workspace: WorkspaceRecord = {
      id: services.random.uuid(),
      name: input.name,
      description: input.description ?? "",
      createdBy: userId,
      enrollAutoApprove: false,
      enrollExpiresAt: null,
      inviteExpiresAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await services.storage.transaction(async (tx) => {
      await tx.workspaces.insert(workspace);
      await tx.members.insert({
        workspaceId: workspace.id,
        userId,
        role: "owner",
        createdAt: now,
        updatedAt: now,
      });
      await audit(tx, {
        action: "workspace.create",
        resource: `workspace:${workspace.id}`,
        workspaceId: workspace.id,
      });
    });
    return { workspace: toWorkspaceMessage(workspace) };
  },
});

export const getWorkspace = defineOperation({
  method: WorkspaceService.method.getWorkspace,
  access: { kind: "workspace", permission: "workspace.read" },
  input: z.object({ workspaceId }),
  async run({ workspace, services }) {
    const found = await services.storage.workspaces.findById(workspace.workspaceId);
    if (!found) throw new NotFoundError(`workspace ${workspace.workspaceId} not found`);
    return { workspace: toWorkspaceMessage(found) };
  },
});

export const listWorkspaces = defineOperation({
  method: WorkspaceService.method.listWorkspaces,
  access: { kind: "caller", callers: ["user", "service_account"] },
  input: z.object({}),
  async run({ ctx, services }) {
    const { caller } = ctx;
    if (caller.kind === "service_account") {
      const own = await services.storage.workspaces.findById(caller.workspaceId);
      return { workspaces: own ? [toWorkspaceMessage(own)] : [] };
    }
    const userId = caller.kind === "user" ? caller.userId : "";
    const workspaces = await services.storage.workspaces.listForUser(userId);
    return { workspaces: workspaces.map(toWorkspaceMessage) };
  },
});

export const updateWorkspace = defineOperation({
  method: WorkspaceService.method.updateWorkspace,
  access: { kind: "workspace", permission: "workspace.update" },
  input: z.object({ workspaceId, name: workspaceName.optional(), description: description.optional() }),
  async run({ input, workspace, services, now, audit }) {
    const updated = await services.storage.transaction(async (tx) => {
      const result = await tx.workspaces.update(
        workspace.workspaceId,
        {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.description !== undefined && { description: input.description }),
        },
        now,
      );
      if (result)
        await audit(tx, { action: "workspace.update", resource: `workspace:${workspace.workspaceId}` });
      return result;
    });
    if (!updated) throw new NotFoundError(`workspace ${workspace.workspaceId} not found`);
    return { workspace: toWorkspaceMessage(updated) };
  },
});

export const deleteWorkspace = defineOperation({
  method: WorkspaceService.method.deleteWorkspace,
  access: { kind: "workspace", permission: "workspace.delete" },
  input: z.object({ workspaceId }),
  async run({ workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.workspaces.delete(workspace.workspaceId))) {
        throw new NotFoundError(`workspace ${workspace.workspaceId} not found`);
      }
      // Kept outside the workspace (workspaceId empty): its own audit rows go with it.
      await audit(tx, {
        action: "workspace.delete",
        resource: `workspace:${workspace.workspaceId}`,
        workspaceId: "",
      });
    });
    return {};
  },
});

export const workspaceOperations = [
  createWorkspace,
  getWorkspace,
  listWorkspaces,
  updateWorkspace,
  deleteWorkspace,
];

/**
 * WorkspaceService, the member half: get and list members, change a member's role, remove a
 * member, transfer ownership.
 *
 * Who may do what (on top of the permission table):
 * - `members.manage` (admins and owners) changes roles and removes members;
 * - only an owner may grant the owner role, or change or remove another owner;
 * - a workspace always keeps an owner: the last one can be neither demoted nor removed (storage
 *   serialises these changes per workspace, so racing requests cannot both succeed);
 * - `workspace.transfer` (owners) hands ownership to another member and becomes an admin.
 *
 * @module
 */

import { WorkspaceService } from "@wap/api";
import * as z from "zod";
import { revokeSubjectCertificates } from "../certificates/revocation.js";
import { type WorkspaceRole, workspaceRoles } from "../context.js";
import { FailedPreconditionError, NotFoundError, PermissionDeniedError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { MembershipChange } from "../storage/members.js";
import type { Repositories } from "../storage/storage.js";
import { defaultPage, paging, text, uuid } from "../validation/rules.js";
import { toWorkspaceMemberMessage } from "./messages.js";

const workspaceId = uuid.optional();

export const memberNotFound = (userId: string) =>
  new NotFoundError(`member ${userId} not found`, { reason: "MEMBER_NOT_FOUND" });

const lastOwner = () =>
  new FailedPreconditionError(
    "a workspace must keep at least one owner: make another member an owner first",
    { reason: "LAST_OWNER" },
  );

const ownersOnly = (action: string) =>
  new PermissionDeniedError(`only an owner may ${action}`, { reason: "OWNER_REQUIRED" });

/** `roleName` has no rule in the contract; a role outside the table is still a malformed request. */
const roleName = z.string().refine((value) => (workspaceRoles as readonly string[]).includes(value), {
  message: `must be one of ${workspaceRoles.join(", ")}`,
});

function settle(result: MembershipChange, userId: string): void {
  if (result === "not_found") throw memberNotFound(userId);
  if (result === "last_owner") throw lastOwner();
}

export const getWorkspaceMember = defineOperation({
  method: WorkspaceService.method.getWorkspaceMember,
  access: { kind: "workspace", permission: "members.read" },
  input: z.object({ workspaceId, userId: uuid }),
  async run({ input, workspace, services }) {
    const profile = await services.storage.members.findProfile(workspace.workspaceId, input.userId);
    if (!profile) throw memberNotFound(input.userId);
    return { member: toWorkspaceMemberMessage(profile) };
  },
});

export const listWorkspaceMembers = defineOperation({
  method: WorkspaceService.method.listWorkspaceMembers,
  access: { kind: "workspace", permission: "members.read" },
  input: z.object({
    workspaceId,
    ...paging,
    query: text({ max: 256 }).optional(),
    roleName: text({ max: 64 }).optional(),
    teamIds: z.array(uuid).max(100, "at most 100 team ids"),
  }),
  async run({ input, workspace, services }) {
    const page = await services.storage.members.listProfiles(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
      ...(input.query && { query: input.query }),
      ...(input.roleName && { role: input.roleName }),
      ...(input.teamIds.length > 0 && { teamIds: input.teamIds }),
    });
    return { members: page.items.map(toWorkspaceMemberMessage), total: page.total };
  },
});

/** The member's current role, or not_found. */
async function currentRole(tx: Repositories, workspaceId: string, userId: string): Promise<WorkspaceRole> {
  const member = await tx.members.find(workspaceId, userId);
  if (!member) throw memberNotFound(userId);
  return member.role;
}

export const removeWorkspaceMember = defineOperation({
  method: WorkspaceService.method.removeWorkspaceMember,
  notifiesDaemons: ["workspace", "revocations"],
  access: { kind: "workspace", permission: "members.manage" },
  input: z.object({ workspaceId, userId: uuid }),
  async run({ input, workspace, services, audit, now }) {
    await services.storage.transaction(async (tx) => {
      const role = await currentRole(tx, workspace.workspaceId, input.userId);
      if (role === "owner" && workspace.role !== "owner") throw ownersOnly("remove an owner");
      settle(await tx.members.remove(workspace.workspaceId, input.userId), input.userId);
      // Access and the certificates that carry it go together.
      await revokeSubjectCertificates(tx, audit, {
        workspaceId: workspace.workspaceId,
        subjectId: input.userId,
        cause: "member.remove",
        now,
      });
      await audit(tx, { action: "member.remove", resource: `user:${input.userId}` });
    });
    return {};
  },
});

export const updateWorkspaceMember = defineOperation({
  method: WorkspaceService.method.updateWorkspaceMember,
  access: { kind: "workspace", permission: "members.manage" },
  input: z.object({ workspaceId, userId: uuid, roleName }),
  async run({ input, workspace, services, now, audit }) {
    const role = input.roleName as WorkspaceRole;
    await services.storage.transaction(async (tx) => {
      const current = await currentRole(tx, workspace.workspaceId, input.userId);
      if ((current === "owner" || role === "owner") && workspace.role !== "owner") {
        throw ownersOnly("grant or take away the owner role");
      }
      if (current === role) return;
      settle(await tx.members.changeRole(workspace.workspaceId, input.userId, role, now), input.userId);
      await audit(tx, { action: "member.update", resource: `user:${input.userId}` });
    });
    return {};
  },
});

export const updateWorkspaceOwner = defineOperation({
  method: WorkspaceService.method.updateWorkspaceOwner,
  // Only people hold the owner role, so only people hand it on.
  access: { kind: "workspace", permission: "workspace.transfer", callers: ["user"] },
  input: z.object({ workspaceId, newOwner: uuid }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const callerId = ctx.caller.kind === "user" ? ctx.caller.userId : "";
    if (input.newOwner === callerId) return {};
    await services.storage.transaction(async (tx) => {
      await currentRole(tx, workspace.workspaceId, input.newOwner);
      settle(
        await tx.members.changeRole(workspace.workspaceId, input.newOwner, "owner", now),
        input.newOwner,
      );
      // The previous owner stays, as an admin; the new owner can make them an owner again.
      settle(await tx.members.changeRole(workspace.workspaceId, callerId, "admin", now), callerId);
      await audit(tx, { action: "workspace.transfer", resource: `user:${input.newOwner}` });
    });
    return {};
  },
});

export const memberOperations = [
  getWorkspaceMember,
  listWorkspaceMembers,
  removeWorkspaceMember,
  updateWorkspaceMember,
  updateWorkspaceOwner,
];

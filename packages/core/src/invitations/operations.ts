/**
 * InvitationService: the workspace's one shared invite link.
 *
 * - RefreshInviteToken mints a new link (256 random bits, prefixed `wapinv_`; only its SHA-256 is
 *   stored) that expires after the workspace's `inviteExpiry`; the previous link stops working.
 *   RevokeInviteToken ends the current one.
 * - The link is single-purpose (it is looked up only as an invite, never as any other token) but
 *   not single-use: it admits everyone who has it until it expires, is refreshed or is revoked.
 * - It grants the **viewer** role, the least privilege: a link travels further than its sender
 *   intends, and an admin raises roles with UpdateWorkspaceMember afterwards.
 * - GetInvitation is public (the page an invitee lands on shows the workspace); AcceptInvitation
 *   needs a signed-in user. Unknown, expired and revoked links are the same `not_found`.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { InvitationService } from "@wap/api";
import * as z from "zod";
import { accountConfig } from "../auth/account-config.js";
import { hashSecret } from "../auth/service-account-tokens.js";
import { actorOf, type WorkspaceRole } from "../context.js";
import { NotFoundError } from "../errors.js";
import { encodeBase64Url } from "../lib/base64.js";
import { defineOperation } from "../operations/operation.js";
import type { WorkspaceInviteRecord } from "../storage/invites.js";
import type { Repositories } from "../storage/storage.js";
import { UniqueViolationError } from "../storage/storage.js";
import { inviteToken } from "../validation/bounds.js";
import { uuid } from "../validation/rules.js";
import { tokenLifetimes } from "../workspaces/settings.js";

/** The role an invite link grants. */
export const inviteRole: WorkspaceRole = "viewer";
const tokenPrefix = "wapinv_";

const invitationNotFound = () =>
  new NotFoundError("invitation not found or expired", { reason: "INVITATION_NOT_FOUND" });

/** The live invite behind a token, or not_found. */
async function liveInvite(repos: Repositories, token: string, now: Date): Promise<WorkspaceInviteRecord> {
  const invite = await repos.workspaceInvites.findByTokenHash(hashSecret(token));
  if (!invite || invite.expiresAt <= now) throw invitationNotFound();
  return invite;
}

export const refreshInviteToken = defineOperation({
  method: InvitationService.method.refreshInviteToken,
  access: { kind: "workspace", permission: "invitations.manage" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ workspace, services, now, audit, ctx }) {
    const token = `${tokenPrefix}${encodeBase64Url(services.random.bytes(32))}`;
    const expiresAt = await services.storage.transaction(async (tx) => {
      const { inviteExpirySeconds } = await tokenLifetimes(tx, workspace.workspaceId);
      const expires = new Date(now.getTime() + inviteExpirySeconds * 1000);
      await tx.workspaceInvites.replace({
        workspaceId: workspace.workspaceId,
        tokenHash: hashSecret(token),
        role: inviteRole,
        createdBy: actorOf(ctx.caller).actorId,
        createdAt: now,
        expiresAt: expires,
      });
      await tx.workspaces.update(workspace.workspaceId, { inviteExpiresAt: expires }, now);
      await audit(tx, { action: "invitation.refresh", resource: `workspace:${workspace.workspaceId}` });
      return expires;
    });
    const link = `${accountConfig(services).publicBaseUrl}/invites/${token}`;
    return { link, expiresAt: timestampFromDate(expiresAt) };
  },
});

export const revokeInviteToken = defineOperation({
  method: InvitationService.method.revokeInviteToken,
  access: { kind: "workspace", permission: "invitations.manage" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ workspace, services, now, audit }) {
    await services.storage.transaction(async (tx) => {
      // Idempotent: revoking when no link is out is not an error.
      await tx.workspaceInvites.delete(workspace.workspaceId);
      await tx.workspaces.update(workspace.workspaceId, { inviteExpiresAt: null }, now);
      await audit(tx, { action: "invitation.revoke", resource: `workspace:${workspace.workspaceId}` });
    });
    return {};
  },
});

export const getInvitation = defineOperation({
  method: InvitationService.method.getInvitation,
  access: { kind: "public" },
  input: z.object({ token: inviteToken }),
  async run({ input, services, now }) {
    const invite = await liveInvite(services.storage, input.token, now);
    const workspace = await services.storage.workspaces.findById(invite.workspaceId);
    if (!workspace) throw invitationNotFound();
    return {
      workspaceName: workspace.name,
      workspaceDescription: workspace.description,
      expiresAt: timestampFromDate(invite.expiresAt),
    };
  },
});

export const acceptInvitation = defineOperation({
  method: InvitationService.method.acceptInvitation,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ token: inviteToken }),
  async run({ input, services, now, audit, ctx }) {
    const userId = ctx.caller.kind === "user" ? ctx.caller.userId : "";
    try {
      return await services.storage.transaction(async (tx) => {
        const invite = await liveInvite(tx, input.token, now);
        // A member keeps the role they have: a link never changes anyone's role.
        if (await tx.members.find(invite.workspaceId, userId)) return { workspaceId: invite.workspaceId };
        await tx.members.insert({
          workspaceId: invite.workspaceId,
          userId,
          role: invite.role,
          createdAt: now,
          updatedAt: now,
        });
        await audit(tx, {
          action: "invitation.accept",
          resource: `user:${userId}`,
          workspaceId: invite.workspaceId,
        });
        return { workspaceId: invite.workspaceId };
      });
    } catch (error) {
      // The same user accepting twice at once: the other call made them a member.
      if (error instanceof UniqueViolationError) {
        const invite = await liveInvite(services.storage, input.token, now);
        return { workspaceId: invite.workspaceId };
      }
      throw error;
    }
  },
});

export const invitationOperations = [refreshInviteToken, revokeInviteToken, getInvitation, acceptInvitation];

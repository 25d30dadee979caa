/**
 * WorkspaceService.UpdateWorkspaceSettings, and the token lifetimes it sets.
 *
 * `enrollExpiry` and `inviteExpiry` are the lifetimes of enrolment tokens and invite links minted
 * from now on (RefreshEnrollToken, RefreshInviteToken). A link already out keeps its expiry:
 * stretching a secret that has been handed around is a separate decision (refresh it). The
 * response reports the expiries of the current token and link, as WorkspaceSettings does.
 *
 * @module
 */

import { WorkspaceService } from "@wap/api";
import * as z from "zod";
import { NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { Repositories } from "../storage/storage.js";
import { tokenExpiryBounds } from "../validation/bounds.js";
import { durationSeconds, uuid } from "../validation/rules.js";
import { toWorkspaceMessage } from "./messages.js";

/** Lifetimes when a workspace never set its own: enrolment tokens 24 hours, invite links 7 days. */
export const defaultTokenLifetimes = { enrollExpirySeconds: 24 * 3600, inviteExpirySeconds: 7 * 24 * 3600 };

/** How long the workspace's next enrolment token and invite link live, in seconds. */
export async function tokenLifetimes(
  repos: Pick<Repositories, "workspaceSettings">,
  workspaceId: string,
): Promise<{ enrollExpirySeconds: number; inviteExpirySeconds: number }> {
  const stored = await repos.workspaceSettings.find(workspaceId);
  return stored
    ? { enrollExpirySeconds: stored.enrollExpirySeconds, inviteExpirySeconds: stored.inviteExpirySeconds }
    : { ...defaultTokenLifetimes };
}

const expiry = durationSeconds(tokenExpiryBounds);

export const updateWorkspaceSettings = defineOperation({
  method: WorkspaceService.method.updateWorkspaceSettings,
  access: { kind: "workspace", permission: "workspace.update" },
  input: z.object({
    workspaceId: uuid.optional(),
    enrollAutoApprove: z.boolean().optional(),
    enrollExpiry: expiry.optional(),
    inviteExpiry: expiry.optional(),
  }),
  async run({ input, workspace, services, now, audit }) {
    const updated = await services.storage.transaction(async (tx) => {
      if (input.enrollExpiry !== undefined || input.inviteExpiry !== undefined) {
        const current = await tokenLifetimes(tx, workspace.workspaceId);
        await tx.workspaceSettings.upsert({
          workspaceId: workspace.workspaceId,
          enrollExpirySeconds: input.enrollExpiry ?? current.enrollExpirySeconds,
          inviteExpirySeconds: input.inviteExpiry ?? current.inviteExpirySeconds,
          updatedAt: now,
        });
      }
      const result = await tx.workspaces.update(
        workspace.workspaceId,
        input.enrollAutoApprove === undefined ? {} : { enrollAutoApprove: input.enrollAutoApprove },
        now,
      );
      if (!result) throw new NotFoundError(`workspace ${workspace.workspaceId} not found`);
      await audit(tx, {
        action: "workspace.settings.update",
        resource: `workspace:${workspace.workspaceId}`,
      });
      return result;
    });
    return { settings: toWorkspaceMessage(updated).settings };
  },
});

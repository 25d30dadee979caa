/**
 * Workspaces and their settings (`workspaces`, `workspace_settings`).
 *
 * @module
 */
import type { Patch } from "./common.js";

export interface WorkspaceRecord {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly createdBy: string;
  readonly enrollAutoApprove: boolean;
  readonly enrollExpiresAt: Date | null;
  readonly inviteExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface WorkspaceRepository {
  insert(workspace: WorkspaceRecord): Promise<void>;
  findById(id: string): Promise<WorkspaceRecord | null>;
  /** The workspaces `userId` is a member of, oldest first. */
  listForUser(userId: string): Promise<WorkspaceRecord[]>;
  update(
    id: string,
    patch: Patch<
      WorkspaceRecord,
      "name" | "description" | "enrollAutoApprove" | "enrollExpiresAt" | "inviteExpiresAt"
    >,
    updatedAt: Date,
  ): Promise<WorkspaceRecord | null>;
  /** Deletes the workspace and everything in it. Returns false when it did not exist. */
  delete(id: string): Promise<boolean>;
}

/** How long newly minted workspace tokens live. */
export interface WorkspaceSettingsRecord {
  readonly workspaceId: string;
  readonly enrollExpirySeconds: number;
  readonly inviteExpirySeconds: number;
  readonly updatedAt: Date;
}

export interface WorkspaceSettingsRepository {
  /** `null` when the workspace never changed its settings (the defaults apply). */
  find(workspaceId: string): Promise<WorkspaceSettingsRecord | null>;
  upsert(settings: WorkspaceSettingsRecord): Promise<void>;
}

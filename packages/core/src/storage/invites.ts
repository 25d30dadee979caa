/**
 * The workspace's invite link (`workspace_invites`).
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";

/** The workspace's one invite link. Only the SHA-256 of its token is kept. */
export interface WorkspaceInviteRecord {
  readonly workspaceId: string;
  /** SHA-256 of the token, hex; unique. */
  readonly tokenHash: string;
  /** The role the link grants. */
  readonly role: WorkspaceRole;
  readonly createdBy: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface WorkspaceInviteRepository {
  /** Stores the link, replacing the workspace's previous one (which stops working). */
  replace(invite: WorkspaceInviteRecord): Promise<void>;
  find(workspaceId: string): Promise<WorkspaceInviteRecord | null>;
  /** By token, across workspaces: the token is all an invitee has. Expired links are returned too. */
  findByTokenHash(tokenHash: string): Promise<WorkspaceInviteRecord | null>;
  delete(workspaceId: string): Promise<boolean>;
}

/**
 * Workspace memberships (`workspace_members`), with the rule that a workspace always keeps an
 * owner.
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";
import type { Page, PageRequest } from "./common.js";
import type { UserRecord } from "./users.js";

export interface MemberRecord {
  readonly workspaceId: string;
  readonly userId: string;
  readonly role: WorkspaceRole;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A membership together with the public profile of its user, as WorkspaceMember shows it. */
export interface MemberProfileRecord {
  readonly member: MemberRecord;
  readonly user: Pick<UserRecord, "id" | "name" | "username" | "email" | "emailVerified" | "picture">;
}

export interface MemberProfileFilter extends PageRequest {
  /** Case-insensitive substring of the name, username or email (ASCII letters fold on every engine). */
  readonly query?: string;
  readonly role?: string;
  /** Members of at least one of these teams. */
  readonly teamIds?: readonly string[];
}

/** What a guarded membership change did. */
export type MembershipChange = "done" | "not_found" | "last_owner";

/** Reads and changes memberships; the guarded changes never leave a workspace without an owner. */
export interface MemberRepository {
  insert(member: MemberRecord): Promise<void>;
  find(workspaceId: string, userId: string): Promise<MemberRecord | null>;
  listByWorkspace(workspaceId: string): Promise<MemberRecord[]>;
  /** Ids of the workspaces where `userId` is an owner and no one else is. */
  listSoleOwnerships(userId: string): Promise<string[]>;
  findProfile(workspaceId: string, userId: string): Promise<MemberProfileRecord | null>;
  /** Oldest membership first, with the total. */
  listProfiles(workspaceId: string, filter: MemberProfileFilter): Promise<Page<MemberProfileRecord>>;
  /**
   * Sets a member's role. Returns `last_owner` and changes nothing when that would leave the
   * workspace without an owner, also when several such changes race (they are serialised per
   * workspace).
   */
  changeRole(
    workspaceId: string,
    userId: string,
    role: WorkspaceRole,
    updatedAt: Date,
  ): Promise<MembershipChange>;
  /**
   * Removes a member, their team memberships and their access grants. Never removes the last
   * owner (`last_owner`), also under concurrency.
   */
  remove(workspaceId: string, userId: string): Promise<MembershipChange>;
}

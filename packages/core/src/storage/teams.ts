/**
 * Teams and their members (`teams`, `team_members`).
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";
import type { MemberProfileRecord } from "./members.js";

export interface TeamRecord {
  readonly id: string;
  readonly workspaceId: string;
  /** Unique in the workspace. */
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface TeamFilter extends PageRequest {
  /** Case-insensitive substring of the name or description. */
  readonly query?: string;
  /** Teams carrying every one of these tags. */
  readonly tags?: readonly string[];
}

/** One member of a team, with the profile WorkspaceMember shows. */
export interface TeamMemberProfileRecord extends MemberProfileRecord {
  readonly teamId: string;
}

export interface TeamRepository {
  /** Throws UniqueViolationError (`teams.name`) for a name taken in the workspace. */
  insert(team: TeamRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<TeamRecord | null>;
  /** Oldest first, with the total. */
  list(workspaceId: string, filter: TeamFilter): Promise<Page<TeamRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Partial<Pick<TeamRecord, "name" | "description" | "tags">>,
    updatedAt: Date,
  ): Promise<TeamRecord | null>;
  /** Deletes the team, its memberships and its access grants. */
  delete(workspaceId: string, id: string): Promise<boolean>;
  /**
   * Adds a workspace member to a team; `false` when they are in it already. The user must be a
   * member of the workspace (callers check; a database constraint enforces it).
   */
  addMember(workspaceId: string, teamId: string, userId: string, at: Date): Promise<boolean>;
  removeMember(workspaceId: string, teamId: string, userId: string): Promise<boolean>;
  /** The members of these teams, oldest team membership first. */
  listMembers(workspaceId: string, teamIds: readonly string[]): Promise<TeamMemberProfileRecord[]>;
  /** The ids of the teams `userId` belongs to. */
  teamsOf(workspaceId: string, userId: string): Promise<string[]>;
}

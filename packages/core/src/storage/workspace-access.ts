/**
 * The workspace-access half of the storage port: member administration, workspace settings, the
 * invite link, domain claims, teams, principals (access grants) and the target lookups access
 * decisions need. Part of {@link Repositories}; kept in its own file because these tables move
 * with the access features.
 *
 * Every method takes the workspace id and never reads or writes a row of another workspace.
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";
import type { DaemonRecord, MemberRecord, Page, PageRequest, TargetRecord, UserRecord } from "./records.js";

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

/** Reads and changes memberships with the rule that a workspace always keeps an owner. */
export interface MembershipRepository {
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

/** A domain a workspace claims; it is verified once a DNS record proves control. */
export interface WorkspaceDomainRecord {
  readonly workspaceId: string;
  /** Lower case, no trailing dot. Unique in the workspace; verified by at most one workspace. */
  readonly domain: string;
  readonly verificationToken: string;
  readonly verifiedAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface WorkspaceDomainRepository {
  /** Throws UniqueViolationError (`workspace_domains.domain`) for a domain the workspace claims. */
  insert(domain: WorkspaceDomainRecord): Promise<void>;
  find(workspaceId: string, domain: string): Promise<WorkspaceDomainRecord | null>;
  /** Alphabetical. */
  list(workspaceId: string): Promise<WorkspaceDomainRecord[]>;
  /**
   * Throws UniqueViolationError (`workspace_domains.verified_domain`) when `verifiedAt` is set
   * and another workspace has verified the same domain.
   */
  update(
    workspaceId: string,
    domain: string,
    patch: Partial<Pick<WorkspaceDomainRecord, "verificationToken" | "verifiedAt">>,
    updatedAt: Date,
  ): Promise<WorkspaceDomainRecord | null>;
  delete(workspaceId: string, domain: string): Promise<boolean>;
}

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

/** Who a grant is for. */
export type SubjectKind = "user" | "team" | "service_account";

export interface SubjectRef {
  readonly kind: SubjectKind;
  readonly id: string;
}

/** A Unix login name on a target. Who may use it are its subjects. */
export interface PrincipalRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string;
  /** Unique per target. */
  readonly username: string;
  readonly createdAt: Date;
}

/** A principal with its subjects, each list oldest grant first. */
export interface PrincipalGrantsRecord extends PrincipalRecord {
  readonly userIds: readonly string[];
  readonly teamIds: readonly string[];
  readonly serviceAccountIds: readonly string[];
}

export interface PrincipalFilter extends PageRequest {
  readonly targetId?: string;
  /** Case-insensitive substring of the username. */
  readonly query?: string;
  /** Principals granted to at least one subject of this kind. */
  readonly subjectKind?: SubjectKind;
}

export interface PrincipalRepository {
  /** Throws UniqueViolationError (`principals.username`) for a username the target has. */
  insert(principal: PrincipalRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<PrincipalRecord | null>;
  /** Deletes the principal and its grants. */
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** Ordered by target, then username, with the total. */
  list(workspaceId: string, filter: PrincipalFilter): Promise<Page<PrincipalGrantsRecord>>;
  /** The principals of these targets, ordered by target, then username. */
  listByTargets(workspaceId: string, targetIds: readonly string[]): Promise<PrincipalGrantsRecord[]>;
  /**
   * Grants the principal to subjects of one kind; existing grants stay as they are. Every subject
   * must exist in the workspace (callers check; database constraints enforce it).
   */
  addSubjects(
    workspaceId: string,
    principalId: string,
    kind: SubjectKind,
    subjectIds: readonly string[],
    at: Date,
  ): Promise<void>;
  /** Returns how many grants were removed. */
  removeSubjects(
    workspaceId: string,
    principalId: string,
    kind: SubjectKind,
    subjectIds: readonly string[],
  ): Promise<number>;
  /** Removes one subject from every principal of the workspace; returns how many grants went. */
  removeSubjectEverywhere(workspaceId: string, subject: SubjectRef): Promise<number>;
  /** The principals granted to any of these subjects, with all their grants. */
  grantedTo(workspaceId: string, subjects: readonly SubjectRef[]): Promise<PrincipalGrantsRecord[]>;
  /** Every distinct username of the workspace, sorted. */
  usernames(workspaceId: string): Promise<string[]>;
}

/** The target lookups that access decisions and filter UIs need. */
export interface TargetCatalogRepository {
  /** These targets (unknown ids are skipped), oldest first. */
  listByIds(workspaceId: string, ids: readonly string[]): Promise<TargetRecord[]>;
  /** Every distinct tag of the workspace's targets, sorted. */
  tags(workspaceId: string): Promise<string[]>;
  /** The daemons serving these targets, oldest first. */
  daemonsOf(workspaceId: string, targetIds: readonly string[]): Promise<DaemonRecord[]>;
}

/** The workspace-access repositories; part of every `Repositories`. */
export interface WorkspaceAccessRepositories {
  readonly memberships: MembershipRepository;
  readonly workspaceSettings: WorkspaceSettingsRepository;
  readonly workspaceInvites: WorkspaceInviteRepository;
  readonly workspaceDomains: WorkspaceDomainRepository;
  readonly teams: TeamRepository;
  readonly principals: PrincipalRepository;
  readonly targetCatalog: TargetCatalogRepository;
}

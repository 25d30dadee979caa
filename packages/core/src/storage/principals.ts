/**
 * Principals, the Unix logins on targets, and who is granted each (`principals`,
 * `principal_subjects`).
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";

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

/** How a grant lets its subject in: always, until a time, or only during an approved request. */
export type GrantKind = "standing" | "time_bound" | "on_request";

/** What an access request under an on-request grant needs before it is approved. */
export interface ApprovalPolicy {
  readonly maxDurationSeconds: number;
  /** Workspace roles whose holders may approve. */
  readonly approverRoles: readonly string[];
  /** Teams whose members may approve. */
  readonly approverTeamIds: readonly string[];
  /** Distinct approvers needed, at least 1. */
  readonly approvalsRequired: number;
  readonly reasonRequired: boolean;
}

/**
 * What an SSH certificate signed under a grant may allow (principals/grant-limits.ts). Everything
 * is off unless allowed here; sshd enforces each.
 */
export interface GrantLimits {
  /** source-address is the client address the server saw at issuance (within `sourceCidrs` if set). */
  readonly pinClientAddress: boolean;
  /** Addresses or CIDR blocks connections may come from, normalised; empty: anywhere. */
  readonly sourceCidrs: readonly string[];
  readonly permitPortForwarding: boolean;
  readonly permitAgentForwarding: boolean;
  readonly permitX11Forwarding: boolean;
  readonly permitPty: boolean;
  /** `verify-required`: FIDO keys must verify the user (PIN or biometrics). */
  readonly verifyRequired: boolean;
  /** Only sk- (FIDO hardware) keys are signed. */
  readonly skKeysOnly: boolean;
  /** The commands allowed; empty: any. */
  readonly commands: readonly string[];
  /** Each connection needs a fresh passkey step-up (absent in grants stored before it existed). */
  readonly requireStepUp?: boolean;
}

/**
 * The terms of one grant: its kind, and the end or the approval policy that kind needs; its
 * limits when it has any (none: certificates carry the authority's own options).
 */
export type GrantTerms = (
  | { readonly kind: "standing" }
  | { readonly kind: "time_bound"; readonly validUntil: Date }
  | { readonly kind: "on_request"; readonly approval: ApprovalPolicy }
) & { readonly limits?: GrantLimits | undefined };

/** One subject's grant of a principal. */
export type GrantRecord = GrantTerms & { readonly subject: SubjectRef; readonly createdAt: Date };

/** A principal with its subjects, each list oldest grant first (every kind of grant). */
export interface PrincipalGrantsRecord extends PrincipalRecord {
  readonly userIds: readonly string[];
  readonly teamIds: readonly string[];
  readonly serviceAccountIds: readonly string[];
  /** The same grants with their terms, oldest first. */
  readonly grants: readonly GrantRecord[];
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
   * Grants the principal to subjects of one kind on these terms (standing when absent); a subject
   * granted already keeps its grant's creation time and takes the new terms. Every subject must
   * exist in the workspace (callers check; database constraints enforce it).
   */
  addSubjects(
    workspaceId: string,
    principalId: string,
    kind: SubjectKind,
    subjectIds: readonly string[],
    at: Date,
    terms?: GrantTerms,
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
  /**
   * Removes the time-bound grants of every workspace that ended at or before `at`; returns the
   * removed grants with their workspace and principal.
   */
  removeLapsed(
    at: Date,
  ): Promise<
    Array<{ readonly workspaceId: string; readonly principalId: string; readonly grant: GrantRecord }>
  >;
  /** Every distinct username of the workspace, sorted. */
  usernames(workspaceId: string): Promise<string[]>;
}

/**
 * The storage port: one typed repository per resource. Adapters implement it; the contract
 * suite in `@wap/core/testing` proves that they do.
 *
 * Rules every adapter follows:
 * - `find*` returns `null` when nothing matches; it never throws for "not found".
 * - Every workspace-scoped method takes the workspace id and never reads or writes a row of
 *   another workspace, even when given the id of one.
 * - A write that breaks a uniqueness rule throws {@link UniqueViolationError} and changes nothing.
 * - `transaction(fn)` commits when `fn` resolves and rolls back, then rethrows, when it throws.
 * - A lost database connection surfaces as {@link StorageUnavailableError}.
 *
 * @module
 */
import type {
  AuditEventRecord,
  AuthorityKind,
  AuthSessionRecord,
  CertificateAuthorityRecord,
  DaemonRecord,
  DaemonStatusValue,
  MemberRecord,
  Page,
  PageRequest,
  RefreshTokenRecord,
  SecretRecord,
  ServiceAccountRecord,
  UserRecord,
  WorkspaceRecord,
} from "./records.js";

/** A field-by-field patch: an absent key leaves the stored value unchanged. */
export type Patch<T, K extends keyof T> = Partial<Pick<T, K>>;

export interface UserRepository {
  insert(user: UserRecord): Promise<void>;
  findById(id: string): Promise<UserRecord | null>;
  /** Looks up by the lower-cased email. */
  findByEmail(email: string): Promise<UserRecord | null>;
  findByUsername(username: string): Promise<UserRecord | null>;
}

export interface AuthSessionRepository {
  insert(session: AuthSessionRecord): Promise<void>;
  findById(id: string): Promise<AuthSessionRecord | null>;
  /** Marks the session revoked (idempotent); its refresh tokens and access tokens stop working. */
  revoke(id: string, at: Date): Promise<void>;
}

export interface RefreshTokenRepository {
  insert(token: RefreshTokenRecord): Promise<void>;
  findByHash(tokenHash: string): Promise<RefreshTokenRecord | null>;
  /**
   * Marks an unrotated token as rotated. Returns `true` for exactly one caller even when many
   * race with the same token; every other call returns `false`.
   */
  markRotated(id: string, at: Date): Promise<boolean>;
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

export interface MemberRepository {
  insert(member: MemberRecord): Promise<void>;
  find(workspaceId: string, userId: string): Promise<MemberRecord | null>;
  listByWorkspace(workspaceId: string): Promise<MemberRecord[]>;
}

export interface CertificateAuthorityRepository {
  insert(ca: CertificateAuthorityRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<CertificateAuthorityRecord | null>;
  /** All authorities of the workspace, oldest first. */
  list(workspaceId: string): Promise<CertificateAuthorityRecord[]>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      CertificateAuthorityRecord,
      | "name"
      | "description"
      | "isActive"
      | "isDefault"
      | "allowedKeyTypes"
      | "lifetimeSeconds"
      | "userDefaultTtlSeconds"
      | "userMaxTtlSeconds"
      | "hostDefaultTtlSeconds"
      | "hostMaxTtlSeconds"
      | "userExtensions"
      | "userCriticalOptions"
    >,
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /**
   * Clears `isDefault` on every authority of this kind in the workspace. Call it inside the
   * transaction that sets a new default: adapters also enforce "at most one default per
   * workspace and kind" with a unique index, so a racing second default fails instead of
   * slipping through.
   */
  clearDefault(workspaceId: string, kind: AuthorityKind, updatedAt: Date): Promise<void>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

export interface ServiceAccountFilter extends PageRequest {
  /** Case-insensitive substring of the name or description. */
  readonly query?: string;
  readonly role?: string;
  /** Accounts carrying every one of these tags. */
  readonly tags?: readonly string[];
}

export interface ServiceAccountRepository {
  insert(account: ServiceAccountRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<ServiceAccountRecord | null>;
  /** For bearer-token authentication, before the workspace is known. */
  findByIdForAuthentication(id: string): Promise<ServiceAccountRecord | null>;
  list(workspaceId: string, filter: ServiceAccountFilter): Promise<Page<ServiceAccountRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<ServiceAccountRecord, "name" | "description" | "role" | "tags">,
    updatedAt: Date,
  ): Promise<ServiceAccountRecord | null>;
  touchLastUsed(id: string, at: Date): Promise<void>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

export interface DaemonFilter extends PageRequest {
  /** Case-insensitive substring of the name. */
  readonly query?: string;
  readonly online?: boolean;
  readonly status?: DaemonStatusValue;
}

export interface DaemonRepository {
  insert(daemon: DaemonRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<DaemonRecord | null>;
  list(workspaceId: string, filter: DaemonFilter): Promise<Page<DaemonRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      DaemonRecord,
      "status" | "recordSessions" | "metadata" | "name" | "targetId" | "onlineSince"
    >,
    updatedAt: Date,
  ): Promise<DaemonRecord | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

export interface AuditEventFilter extends PageRequest {
  readonly since?: Date;
  readonly until?: Date;
  readonly action?: string;
  readonly actorId?: string;
}

export interface AuditEventRepository {
  append(event: AuditEventRecord): Promise<void>;
  /** Newest first. */
  list(workspaceId: string, filter: AuditEventFilter): Promise<Page<AuditEventRecord>>;
}

export interface SecretRepository {
  find(name: string): Promise<SecretRecord | null>;
  /**
   * Stores the secret unless one of that name exists, and returns the stored one. When several
   * server instances start at once, they all end up with the same secret.
   */
  insertIfAbsent(secret: SecretRecord): Promise<SecretRecord>;
}

/** Every repository: what an operation reads and writes, inside or outside a transaction. */
export interface Repositories {
  readonly users: UserRepository;
  readonly authSessions: AuthSessionRepository;
  readonly refreshTokens: RefreshTokenRepository;
  readonly workspaces: WorkspaceRepository;
  readonly members: MemberRepository;
  readonly certificateAuthorities: CertificateAuthorityRepository;
  readonly serviceAccounts: ServiceAccountRepository;
  readonly daemons: DaemonRepository;
  readonly auditEvents: AuditEventRepository;
  readonly secrets: SecretRepository;
}

/** What a storage backend can do beyond the port's guarantees. */
export interface StorageCapabilities {
  /** Several server processes may share this storage (PostgreSQL: yes; embedded SQLite: no). */
  readonly multiInstance: boolean;
}

/** A storage backend. */
export interface Storage extends Repositories {
  readonly capabilities: StorageCapabilities;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back (and the error
   * rethrown) when it throws. Nested calls run in the outer transaction.
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
  /** Checks that the database answers (used by readiness probes). */
  ping(): Promise<void>;
  /** Releases connections. The storage is unusable afterwards. */
  close(): Promise<void>;
}

/** A write broke a uniqueness rule; nothing was changed. */
export class UniqueViolationError extends Error {
  /** Which rule, as `<table>.<column>` (e.g. `certificate_authorities.name`). */
  readonly constraint: string;
  constructor(constraint: string, options?: { cause?: unknown }) {
    super(`unique constraint violated: ${constraint}`, options);
    this.name = "UniqueViolationError";
    this.constraint = constraint;
  }
}

/** The database cannot be reached. The request may be retried once it is back. */
export class StorageUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StorageUnavailableError";
  }
}

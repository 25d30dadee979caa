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
 *   Once it resolves, the writes are durable: they survive a crash of the process or the machine.
 * - A lost database connection surfaces as {@link StorageUnavailableError}.
 *
 * @module
 */
import type { AccountRepositories } from "./accounts.js";
import type { DaemonProtocolQueries, DaemonProtocolRepositories } from "./daemons-sessions.js";
import type { RecordingRepositories } from "./recordings.js";
import type {
  AuditEventRecord,
  AuthorityKeyRecord,
  AuthorityKind,
  AuthSessionRecord,
  CertificateAuthorityRecord,
  DaemonRecord,
  DaemonStatusValue,
  IssuedCertificateKind,
  IssuedCertificateRecord,
  MemberRecord,
  Page,
  PageRequest,
  RefreshTokenRecord,
  RetiredAuthorityKeyRecord,
  RevocationReasonName,
  RotationPhase,
  SecretRecord,
  ServiceAccountRecord,
  TargetRecord,
  UserRecord,
  WorkspaceRecord,
} from "./records.js";
import type { SsoBillingRepositories } from "./sso-billing.js";
import type { WorkspaceAccessRepositories } from "./workspace-access.js";

/** A field-by-field patch: an absent key leaves the stored value unchanged. */
export type Patch<T, K extends keyof T> = Partial<Pick<T, K>>;

export interface UserRepository {
  insert(user: UserRecord): Promise<void>;
  findById(id: string): Promise<UserRecord | null>;
  /** Looks up by the lower-cased email. */
  findByEmail(email: string): Promise<UserRecord | null>;
  /** Looks up by username whatever its case: usernames are unique case-insensitively. */
  findByUsername(username: string): Promise<UserRecord | null>;
  update(
    id: string,
    patch: Patch<
      UserRecord,
      "name" | "username" | "email" | "emailVerified" | "picture" | "passwordHash" | "enableEmailRecovery"
    >,
    updatedAt: Date,
  ): Promise<UserRecord | null>;
  /** Deletes the user and, by cascade, their memberships, sessions, credentials and devices. */
  delete(id: string): Promise<boolean>;
}

export interface AuthSessionRepository {
  insert(session: AuthSessionRecord): Promise<void>;
  findById(id: string): Promise<AuthSessionRecord | null>;
  /** Marks the session revoked (idempotent); its refresh tokens and access tokens stop working. */
  revoke(id: string, at: Date): Promise<void>;
  /** The user's sessions that are neither revoked nor expired at `at`, oldest first. */
  listActiveForUser(userId: string, at: Date): Promise<AuthSessionRecord[]>;
  /** Revokes every live session of the user except `exceptId` (idempotent). */
  revokeAllForUser(userId: string, at: Date, exceptId?: string): Promise<void>;
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
  /** Ids of the workspaces where `userId` is an owner and no one else is. */
  listSoleOwnerships(userId: string): Promise<string[]>;
}

export interface CertificateAuthorityRepository {
  insert(ca: CertificateAuthorityRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<CertificateAuthorityRecord | null>;
  /** For the public CRL endpoint, before any workspace is known: the authority of this id anywhere. */
  findForPublication(id: string): Promise<CertificateAuthorityRecord | null>;
  /** All authorities of the workspace, oldest first. */
  list(workspaceId: string): Promise<CertificateAuthorityRecord[]>;
  /** The workspace's default authority of this kind, or `null` when it has none. */
  findDefault(workspaceId: string, kind: AuthorityKind): Promise<CertificateAuthorityRecord | null>;
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
  /**
   * Replaces the signing key (rollover, or the end of a staged rotation): sets the key fields and
   * `keyVersion` to `expectedVersion + 1` and ends any rotation (phase `none`, no next key), only
   * if the stored `keyVersion` still is `expectedVersion`. Returns the updated authority, or
   * `null` when it does not exist or another rollover won the race.
   */
  replaceKey(
    workspaceId: string,
    id: string,
    expectedVersion: number,
    key: AuthorityKeyRecord,
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /**
   * Moves a staged rotation to `phase` with `nextKey`, only if the stored phase still is
   * `expectedPhase` and the key version `expectedVersion`; `null` otherwise (a racing move won, or
   * the authority is gone).
   */
  setRotation(
    workspaceId: string,
    id: string,
    expected: { readonly phase: RotationPhase; readonly keyVersion: number },
    next: { readonly phase: RotationPhase; readonly nextKey: AuthorityKeyRecord | null },
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /** Deletes the authority and its retired keys. The issuance ledger keeps its entries. */
  delete(workspaceId: string, id: string): Promise<boolean>;
}

/** The keys authorities used before a rollover (public halves only). */
export interface RetiredAuthorityKeyRepository {
  /** Throws {@link UniqueViolationError} (`certificate_authority_keys.version`) for a version kept already. */
  insert(key: RetiredAuthorityKeyRecord): Promise<void>;
  /** The retired keys of one authority, newest version first. */
  list(workspaceId: string, caId: string): Promise<RetiredAuthorityKeyRecord[]>;
}

export interface TargetFilter extends PageRequest {
  readonly caId?: string;
  readonly daemonId?: string;
  /** Case-insensitive substring of the name or description. */
  readonly query?: string;
  /** Targets carrying every one of these tags. */
  readonly tags?: readonly string[];
  /** Targets with a principal of at least one of these usernames. */
  readonly principals?: readonly string[];
}

export interface TargetRepository {
  /** Throws {@link UniqueViolationError} (`targets.name`) for a name taken in the workspace. */
  insert(target: TargetRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<TargetRecord | null>;
  /** Oldest first, with the total. */
  list(workspaceId: string, filter: TargetFilter): Promise<Page<TargetRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      TargetRecord,
      "caId" | "daemonId" | "name" | "description" | "tags" | "endpoints" | "metadata"
    >,
    updatedAt: Date,
  ): Promise<TargetRecord | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** How many targets of the workspace name this authority: an authority in use is not deleted. */
  countByCa(workspaceId: string, caId: string): Promise<number>;
}

export interface IssuedCertificateFilter extends PageRequest {
  readonly caId?: string;
  readonly kind?: IssuedCertificateKind;
  readonly requesterId?: string;
  readonly targetId?: string;
  /** Certificates valid at some instant of [validFrom, validUntil). */
  readonly validFrom?: Date;
  readonly validUntil?: Date;
  readonly revoked?: boolean;
}

/** How a revocation is recorded. */
export interface Revocation {
  readonly revokedAt: Date;
  readonly reason: RevocationReasonName;
  readonly revokedBy: string;
}

/** Which unexpired, unrevoked certificates a revocation takes. */
export type RevocationSelector =
  | { readonly by: "serial"; readonly caId: string; readonly serial: string }
  | { readonly by: "key"; readonly keyFingerprint: string; readonly caId?: string }
  | { readonly by: "requester"; readonly requesterId: string };

/**
 * The issuance ledger. Entries are only ever added; they outlive the authority that signed them
 * and go only with their workspace.
 */
export interface IssuedCertificateRepository {
  /**
   * Records an issued certificate. Serial numbers are unique per authority: a second entry with
   * the same `caId` and `serial` throws {@link UniqueViolationError}
   * (`issued_certificates.serial`) and records nothing, even when both race.
   */
  insert(certificate: IssuedCertificateRecord): Promise<void>;
  findBySerial(workspaceId: string, caId: string, serial: string): Promise<IssuedCertificateRecord | null>;
  findById(workspaceId: string, id: string): Promise<IssuedCertificateRecord | null>;
  /**
   * Newest first. The ledger is not counted: `total` is the entries up to the end of this page,
   * plus one when more follow (exact on the last page), so a page over a ledger of millions costs
   * what the page costs.
   */
  list(workspaceId: string, filter: IssuedCertificateFilter): Promise<Page<IssuedCertificateRecord>>;
  /**
   * Marks the certificates `selector` names that are unexpired at `revocation.revokedAt` and not
   * revoked yet, and returns them as revoked. Revoking again changes nothing.
   */
  revoke(
    workspaceId: string,
    selector: RevocationSelector,
    revocation: Revocation,
  ): Promise<IssuedCertificateRecord[]>;
  /**
   * Revokes every unexpired, unrevoked certificate `requesterId` asked for, in every workspace
   * (the account is being deleted). Returns them as revoked.
   */
  revokeAllOfRequester(requesterId: string, revocation: Revocation): Promise<IssuedCertificateRecord[]>;
  /** The revoked certificates of an authority still unexpired at `now`, in no particular order. */
  listRevoked(workspaceId: string, caId: string, now: Date): Promise<IssuedCertificateRecord[]>;
  /**
   * The latest `validBefore` among the certificates one key version of an authority signed, or
   * `null` when it signed none: how long that key must stay trusted after a rollover.
   */
  latestExpiry(workspaceId: string, caId: string, caKeyVersion: number): Promise<Date | null>;
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

export interface DaemonRepository extends DaemonProtocolQueries {
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
  /** ASCII-case-insensitive substring of the action, resource, actor, address or user agent. */
  readonly search?: string;
  /** Events of any of these actors / actor types / actions (an empty list filters nothing). */
  readonly actorIds?: readonly string[];
  readonly actorTypes?: readonly string[];
  readonly actions?: readonly string[];
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

/** Where one sealed value lives: what the key store's context of it is made of. */
export type SealedValueRef =
  | { readonly kind: "ca_key"; readonly caId: string; readonly keyVersion: number }
  | { readonly kind: "secret"; readonly name: string }
  | { readonly kind: "oidc_client_secret"; readonly providerId: string; readonly workspaceId: string };

export interface SealedValue {
  readonly ref: SealedValueRef;
  readonly sealed: Uint8Array;
}

/**
 * Every value sealed with the master key, across all workspaces: for re-sealing them under a
 * new key (`wap-server rotate-master-key`), never for operations serving a request.
 */
export interface SealedValueRepository {
  /** Every sealed value: CA private keys, server secrets, OIDC client secrets. */
  listAll(): Promise<SealedValue[]>;
  /**
   * Replaces one sealed value. A CA key is replaced only while the authority still has that key
   * version. Returns false when the row (or that version) is gone.
   */
  replace(ref: SealedValueRef, sealed: Uint8Array): Promise<boolean>;
}

/** Every repository: what an operation reads and writes, inside or outside a transaction. */
export interface Repositories
  extends AccountRepositories,
    WorkspaceAccessRepositories,
    SsoBillingRepositories,
    DaemonProtocolRepositories,
    RecordingRepositories {
  readonly users: UserRepository;
  readonly authSessions: AuthSessionRepository;
  readonly refreshTokens: RefreshTokenRepository;
  readonly workspaces: WorkspaceRepository;
  readonly members: MemberRepository;
  readonly certificateAuthorities: CertificateAuthorityRepository;
  readonly retiredAuthorityKeys: RetiredAuthorityKeyRepository;
  readonly targets: TargetRepository;
  readonly issuedCertificates: IssuedCertificateRepository;
  readonly serviceAccounts: ServiceAccountRepository;
  readonly daemons: DaemonRepository;
  readonly auditEvents: AuditEventRepository;
  readonly secrets: SecretRepository;
  readonly sealedValues: SealedValueRepository;
}

/** What a storage backend can do beyond the port's guarantees. */
export interface StorageCapabilities {
  /** Several server processes may share this storage (PostgreSQL: yes; embedded SQLite: no). */
  readonly multiInstance: boolean;
}

/**
 * Rows of the append-only tables written together: all of them, or none. Certificate issuance
 * writes its ledger entry and audit event this way.
 */
export interface AppendUnit {
  readonly issuedCertificates?: readonly IssuedCertificateRecord[];
  readonly auditEvents?: readonly AuditEventRecord[];
}

/** A storage backend. */
export interface Storage extends Repositories {
  readonly capabilities: StorageCapabilities;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back (and the error
   * rethrown) when it throws. Nested calls run in the outer transaction.
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
  /**
   * Writes the rows of `unit` atomically, in a transaction of its own (never the caller's: call
   * it outside any transaction), and resolves once they are durable. Units appended at about the
   * same time may share a commit (group commit), yet each succeeds or fails alone: one that breaks
   * a uniqueness rule throws {@link UniqueViolationError} and leaves none of its rows behind,
   * whatever the others do.
   */
  append(unit: AppendUnit): Promise<void>;
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

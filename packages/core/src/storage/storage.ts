/**
 * The storage port: one typed repository per resource, each in the module named after it
 * (`users.ts`, `targets.ts`, ...), assembled here into {@link Repositories} and {@link Storage}.
 * Adapters implement it; the contract suite in `@wap/core/testing` proves that they do.
 *
 * Rules every adapter follows:
 * - `find*` returns `null` when nothing matches; it never throws for "not found".
 * - Every workspace-scoped method takes the workspace id and never reads or writes a row of
 *   another workspace, even when given the id of one.
 * - A write that breaks a uniqueness rule throws {@link UniqueViolationError} and changes nothing.
 * - `transaction(fn)` commits when `fn` resolves and rolls back, then rethrows, when it throws.
 *   Once it resolves, the writes are durable: they survive a crash of the process or the machine.
 *   Inside `fn`, work goes through `tx`: a call on the storage's own repositories from there is a
 *   mistake, and adapters may refuse it (the SQL adapters do under test).
 * - A lost database connection surfaces as {@link StorageUnavailableError}.
 *
 * @module
 */
import type { AccessRequestRepository } from "./access-requests.js";
import type { AuditCheckpointRepository, AuditEventRecord, AuditEventRepository } from "./audit.js";
import type { BackupCodeRepository } from "./backup-codes.js";
import type { BillingAccountRepository, WorkspaceUsageRepository } from "./billing.js";
import type {
  CertificateAuthorityRepository,
  RetiredAuthorityKeyRepository,
} from "./certificate-authorities.js";
import type { IssuedCertificateRecord, IssuedCertificateRepository } from "./certificates.js";
import type { DaemonSessionRepository } from "./daemon-sessions.js";
import type { DaemonRepository } from "./daemons.js";
import type { CliLoginRepository, UserDeviceRepository } from "./devices.js";
import type { WorkspaceDomainRepository } from "./domains.js";
import type { EnrollTokenRepository } from "./enroll-tokens.js";
import type { WorkspaceInviteRepository } from "./invites.js";
import type { LinkedAccountRepository } from "./linked-accounts.js";
import type { LoginThrottleRepository } from "./login-throttles.js";
import type { MemberRepository } from "./members.js";
import type { OneTimeTokenRepository } from "./one-time-tokens.js";
import type { PasskeyRepository } from "./passkeys.js";
import type { PrincipalRepository } from "./principals.js";
import type { RecordingRepository } from "./recordings.js";
import type { RequestNonceRepository } from "./request-nonces.js";
import type { SealedValueRepository, SecretRepository } from "./secrets.js";
import type { ServiceAccountRepository } from "./service-accounts.js";
import type { AuthSessionRepository, RefreshTokenRepository } from "./sessions.js";
import type { SshSessionRepository } from "./ssh-sessions.js";
import type { SshStepUpRepository } from "./ssh-step-ups.js";
import type {
  OidcProviderRepository,
  SamlProviderRepository,
  SsoDirectoryRepository,
  SsoLoginStateRepository,
} from "./sso.js";
import type { TargetRepository } from "./targets.js";
import type { TeamRepository } from "./teams.js";
import type { UserRepository } from "./users.js";
import type { WebhookEndpointRepository } from "./webhooks.js";
import type { WorkspaceRepository, WorkspaceSettingsRepository } from "./workspaces.js";

/** Every repository, one per resource: what an operation reads and writes, inside or outside a transaction. */
export interface Repositories {
  readonly users: UserRepository;
  readonly authSessions: AuthSessionRepository;
  readonly refreshTokens: RefreshTokenRepository;
  readonly oneTimeTokens: OneTimeTokenRepository;
  readonly passkeys: PasskeyRepository;
  readonly backupCodes: BackupCodeRepository;
  readonly userDevices: UserDeviceRepository;
  readonly cliLogins: CliLoginRepository;
  readonly linkedAccounts: LinkedAccountRepository;
  readonly loginThrottles: LoginThrottleRepository;
  readonly requestNonces: RequestNonceRepository;
  readonly workspaces: WorkspaceRepository;
  readonly workspaceSettings: WorkspaceSettingsRepository;
  readonly workspaceInvites: WorkspaceInviteRepository;
  readonly workspaceDomains: WorkspaceDomainRepository;
  readonly members: MemberRepository;
  readonly teams: TeamRepository;
  readonly principals: PrincipalRepository;
  readonly certificateAuthorities: CertificateAuthorityRepository;
  readonly retiredAuthorityKeys: RetiredAuthorityKeyRepository;
  readonly issuedCertificates: IssuedCertificateRepository;
  readonly targets: TargetRepository;
  readonly serviceAccounts: ServiceAccountRepository;
  readonly daemons: DaemonRepository;
  readonly enrollTokens: EnrollTokenRepository;
  readonly daemonSessions: DaemonSessionRepository;
  readonly sshSessions: SshSessionRepository;
  readonly recordings: RecordingRepository;
  readonly auditEvents: AuditEventRepository;
  readonly auditCheckpoints: AuditCheckpointRepository;
  readonly oidcProviders: OidcProviderRepository;
  readonly samlProviders: SamlProviderRepository;
  readonly ssoLoginStates: SsoLoginStateRepository;
  readonly ssoDirectory: SsoDirectoryRepository;
  readonly billingAccounts: BillingAccountRepository;
  readonly workspaceUsage: WorkspaceUsageRepository;
  readonly secrets: SecretRepository;
  readonly sealedValues: SealedValueRepository;
  readonly accessRequests: AccessRequestRepository;
  readonly webhookEndpoints: WebhookEndpointRepository;
  readonly sshStepUps: SshStepUpRepository;
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

// --- names of earlier releases, kept so that adapters written against them still compile ---

/** @deprecated Use {@link Repositories}: these repositories are part of it. */
export type AccountRepositories = Pick<
  Repositories,
  | "oneTimeTokens"
  | "passkeys"
  | "backupCodes"
  | "userDevices"
  | "cliLogins"
  | "linkedAccounts"
  | "loginThrottles"
  | "requestNonces"
>;

/** @deprecated Use {@link Repositories}: these repositories are part of it. */
export type WorkspaceAccessRepositories = Pick<
  Repositories,
  "workspaceSettings" | "workspaceInvites" | "workspaceDomains" | "teams" | "principals"
>;

/** @deprecated Use {@link Repositories}: these repositories are part of it. */
export type SsoBillingRepositories = Pick<
  Repositories,
  "oidcProviders" | "samlProviders" | "ssoLoginStates" | "billingAccounts" | "ssoDirectory" | "workspaceUsage"
>;

/** @deprecated Use {@link Repositories}: these repositories are part of it. */
export type DaemonProtocolRepositories = Pick<Repositories, "enrollTokens" | "daemonSessions">;

/** @deprecated Use {@link Repositories}: these repositories are part of it. */
export type RecordingRepositories = Pick<Repositories, "recordings">;

/** @deprecated The guarded membership changes are part of {@link MemberRepository}. */
export type MembershipRepository = Pick<
  MemberRepository,
  "findProfile" | "listProfiles" | "changeRole" | "remove"
>;

/** @deprecated The catalog lookups are part of {@link TargetRepository}. */
export type TargetCatalogRepository = Pick<TargetRepository, "listByIds" | "tags" | "daemonsOf">;

/** @deprecated The bulk reads are part of {@link AuditEventRepository}. */
export type AuditLogRepository = Pick<AuditEventRepository, "count" | "scan">;

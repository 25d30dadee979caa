/**
 * The storage port of the Workspace Access Platform, for adapter authors.
 *
 * @module
 */

// What an entry of the audit hash chain covers: the storage links entries with it.
export { auditEntryContent, chainHash, genesisHash } from "@wap/audit-chain";
export type {
  AccessRequestEventRecord,
  AccessRequestEventType,
  AccessRequestRecord,
  AccessRequestRepository,
  AccessRequestState,
} from "./access-requests.js";
export type {
  AuditChainHead,
  AuditChainRange,
  AuditCheckpointRecord,
  AuditCheckpointRepository,
  AuditEventFilter,
  AuditEventRecord,
  AuditEventRepository,
  AuditScanPage,
  AuditScanRequest,
  AuditSigningKeyRecord,
  ChainedAuditEventRecord,
} from "./audit.js";
export type {
  BackupCodeRecord,
  BackupCodeRepository,
} from "./backup-codes.js";
export type {
  BillingAccountRecord,
  BillingAccountRepository,
  WorkspaceCountsRecord,
  WorkspaceUsageRepository,
} from "./billing.js";
export type {
  AuthorityKeyRecord,
  AuthorityKind,
  CertificateAuthorityRecord,
  CertificateAuthorityRepository,
  KeyAlgorithm,
  KeyStorageKind,
  RetiredAuthorityKeyRecord,
  RetiredAuthorityKeyRepository,
  RotationPhase,
} from "./certificate-authorities.js";
export type {
  CertificateLimits,
  IssuedCertificateFilter,
  IssuedCertificateKind,
  IssuedCertificateRecord,
  IssuedCertificateRepository,
  Revocation,
  RevocationReasonName,
  RevocationSelector,
} from "./certificates.js";
export type {
  Page,
  PageRequest,
  Patch,
} from "./common.js";
export type {
  DaemonSessionRecord,
  DaemonSessionRepository,
  DaemonSessionState,
  SessionRelayRecord,
  SessionRelayState,
} from "./daemon-sessions.js";
export type {
  DaemonFilter,
  DaemonHolderRecord,
  DaemonProtocolQueries,
  DaemonRecord,
  DaemonRepository,
  DaemonStatusValue,
  DaemonSyncRecord,
} from "./daemons.js";
export type {
  CliLoginRecord,
  CliLoginRepository,
  UserDeviceRecord,
  UserDeviceRepository,
} from "./devices.js";
export type {
  WorkspaceDomainRecord,
  WorkspaceDomainRepository,
} from "./domains.js";
export type {
  EnrollTokenRecord,
  EnrollTokenRepository,
} from "./enroll-tokens.js";
export type {
  WorkspaceInviteRecord,
  WorkspaceInviteRepository,
} from "./invites.js";
export type {
  LinkedAccountRecord,
  LinkedAccountRepository,
} from "./linked-accounts.js";
export type {
  LoginThrottleRecord,
  LoginThrottleRepository,
} from "./login-throttles.js";
export type {
  MemberProfileFilter,
  MemberProfileRecord,
  MemberRecord,
  MemberRepository,
  MembershipChange,
} from "./members.js";
export type {
  OneTimeTokenPurpose,
  OneTimeTokenRecord,
  OneTimeTokenRepository,
} from "./one-time-tokens.js";
export type {
  PasskeyRecord,
  PasskeyRepository,
} from "./passkeys.js";
export type {
  ApprovalPolicy,
  GrantKind,
  GrantLimits,
  GrantRecord,
  GrantTerms,
  PrincipalFilter,
  PrincipalGrantsRecord,
  PrincipalRecord,
  PrincipalRepository,
  SubjectKind,
  SubjectRef,
} from "./principals.js";
export type {
  RecordingChunkRecord,
  RecordingChunkScan,
  RecordingFilter,
  RecordingFormat,
  RecordingPage,
  RecordingRecord,
  RecordingRepository,
} from "./recordings.js";
export type { RequestNonceRepository } from "./request-nonces.js";
export type {
  SealedValue,
  SealedValueRef,
  SealedValueRepository,
  SecretRecord,
  SecretRepository,
} from "./secrets.js";
export type {
  ServiceAccountFilter,
  ServiceAccountRecord,
  ServiceAccountRepository,
  ServiceAccountRole,
} from "./service-accounts.js";
export type {
  AuthSessionRecord,
  AuthSessionRepository,
  RefreshTokenRecord,
  RefreshTokenRepository,
} from "./sessions.js";
export type {
  SshSessionEnd,
  SshSessionKind,
  SshSessionRecord,
  SshSessionRepository,
} from "./ssh-sessions.js";
export type {
  SshStepUpRecord,
  SshStepUpRepository,
  SshStepUpWithUses,
  StepUpTarget,
} from "./ssh-step-ups.js";
export type {
  OidcProviderRecord,
  OidcProviderRepository,
  SamlIdpMetadata,
  SamlProviderRecord,
  SamlProviderRepository,
  SsoDirectoryRepository,
  SsoLoginStateRecord,
  SsoLoginStateRepository,
  SsoProtocol,
} from "./sso.js";
export type {
  AccountRepositories,
  AppendUnit,
  AuditLogRepository,
  DaemonProtocolRepositories,
  MembershipRepository,
  RecordingRepositories,
  Repositories,
  SsoBillingRepositories,
  Storage,
  StorageCapabilities,
  TargetCatalogRepository,
  WorkspaceAccessRepositories,
} from "./storage.js";
export { StorageUnavailableError, UniqueViolationError } from "./storage.js";
export type {
  TargetFilter,
  TargetRecord,
  TargetRepository,
} from "./targets.js";
export type {
  TeamFilter,
  TeamMemberProfileRecord,
  TeamRecord,
  TeamRepository,
} from "./teams.js";
export type {
  UserRecord,
  UserRepository,
} from "./users.js";
export type {
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookDisabledReason,
  WebhookEndpointRecord,
  WebhookEndpointRepository,
  WebhookProgress,
  WebhookSecretRecord,
  WebhookSettings,
} from "./webhooks.js";
export type {
  WorkspaceRecord,
  WorkspaceRepository,
  WorkspaceSettingsRecord,
  WorkspaceSettingsRepository,
} from "./workspaces.js";

/**
 * The storage port of the Workspace Access Platform, for adapter authors.
 *
 * @module
 */
export type {
  AuditEventRecord,
  AuthorityKind,
  AuthSessionRecord,
  CertificateAuthorityRecord,
  DaemonRecord,
  DaemonStatusValue,
  KeyAlgorithm,
  MemberRecord,
  Page,
  PageRequest,
  RefreshTokenRecord,
  SecretRecord,
  ServiceAccountRecord,
  ServiceAccountRole,
  UserRecord,
  WorkspaceRecord,
} from "./records.js";
export type {
  AuditEventFilter,
  AuditEventRepository,
  AuthSessionRepository,
  CertificateAuthorityRepository,
  DaemonFilter,
  DaemonRepository,
  MemberRepository,
  Patch,
  RefreshTokenRepository,
  Repositories,
  SecretRepository,
  ServiceAccountFilter,
  ServiceAccountRepository,
  Storage,
  StorageCapabilities,
  UserRepository,
  WorkspaceRepository,
} from "./storage.js";
export { StorageUnavailableError, UniqueViolationError } from "./storage.js";

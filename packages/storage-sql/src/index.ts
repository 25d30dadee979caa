/**
 * The Kysely query layer shared by the SQL storage adapters of the Workspace Access Platform:
 * schema, migrations, row mapping and every query, written once for SQLite and PostgreSQL.
 * For adapter authors; applications use `@wap/storage-sqlite` or `@wap/storage-postgres`.
 *
 * @module
 */

// --- for adapter authors ---
export type { DriverErrorKind, SqlDialectName, SqlDialectTraits } from "./dialect.js";
export type { AppendBatcher, CommitUnits } from "./lib/append-batcher.js";
export { createAppendBatcher } from "./lib/append-batcher.js";
export type { DirectExecutor, ExecuteQuery } from "./lib/direct.js";
export { translateError as translateDriverError } from "./lib/errors.js";
export { UsernameCaseClashError } from "./migrations/011-account-security.js";
export type { MigrateOptions } from "./migrations/index.js";
export {
  createMigrations,
  migrateToLatest,
  migrationLockTableName,
  migrationTableName,
  SchemaVersionError,
} from "./migrations/index.js";
export type { QueryRunner } from "./repositories.js";
export { createRepositories } from "./repositories.js";
export type {
  AuditEventsTable,
  AuthSessionsTable,
  CertificateAuthoritiesTable,
  CertificateAuthorityKeysTable,
  DaemonsTable,
  Database,
  IssuedCertificatesTable,
  RefreshTokensTable,
  SecretsTable,
  ServiceAccountsTable,
  TargetsTable,
  UsersTable,
  WorkspaceMembersTable,
  WorkspacesTable,
} from "./schema.js";
export type {
  AccountTables,
  BackupCodesTable,
  CliLoginsTable,
  LinkedAccountsTable,
  LoginThrottlesTable,
  OneTimeTokensTable,
  PasskeysTable,
  RequestNoncesTable,
  UserDevicesTable,
} from "./schema-accounts.js";
export type {
  DaemonEnrollTokensTable,
  DaemonProtocolColumns,
  DaemonSessionsTable,
  DaemonTables,
  ServerInstancesTable,
  SshSessionsTable,
} from "./schema-daemons.js";
export type {
  BillingAccountsTable,
  OidcProvidersTable,
  SamlProvidersTable,
  SsoBillingTables,
  SsoLoginStatesTable,
} from "./schema-sso-billing.js";
export type {
  PrincipalSubjectsTable,
  PrincipalsTable,
  TeamMembersTable,
  TeamsTable,
  WorkspaceAccessTables,
  WorkspaceDomainsTable,
  WorkspaceInvitesTable,
  WorkspaceSettingsTable,
} from "./schema-workspace-access.js";
export type { AppendStatements, SqlStorageOptions } from "./storage.js";
export { createSqlRepositories, createSqlStorage } from "./storage.js";

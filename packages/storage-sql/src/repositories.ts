/**
 * Every query of the port, written once for both dialects: one module per resource under
 * `repositories/`, assembled here into `Repositories`.
 *
 * @module
 */
import type { Repositories } from "@wap/core/storage";
import type { Kysely } from "kysely";
import type { SqlDialectTraits } from "./dialect.js";
import type { ExecuteQuery } from "./lib/direct.js";
import { createAccessRequestRepository } from "./repositories/access-requests.js";
import { createAuditCheckpointRepository, createAuditEventRepository } from "./repositories/audit.js";
import { createBackupCodeRepository } from "./repositories/backup-codes.js";
import { createBillingAccountRepository, createWorkspaceUsageRepository } from "./repositories/billing.js";
import {
  createCertificateAuthorityRepository,
  createRetiredAuthorityKeyRepository,
} from "./repositories/certificate-authorities.js";
import { createIssuedCertificateRepository } from "./repositories/certificates.js";
import { createDaemonSessionRepository } from "./repositories/daemon-sessions.js";
import { createDaemonRepository } from "./repositories/daemons.js";
import { createCliLoginRepository, createUserDeviceRepository } from "./repositories/devices.js";
import { createWorkspaceDomainRepository } from "./repositories/domains.js";
import { createEnrollTokenRepository } from "./repositories/enroll-tokens.js";
import { createWorkspaceInviteRepository } from "./repositories/invites.js";
import { createLinkedAccountRepository } from "./repositories/linked-accounts.js";
import { createLoginThrottleRepository } from "./repositories/login-throttles.js";
import { createMemberRepository } from "./repositories/members.js";
import { createOneTimeTokenRepository } from "./repositories/one-time-tokens.js";
import { createPasskeyRepository } from "./repositories/passkeys.js";
import { createPrincipalRepository } from "./repositories/principals.js";
import { createRecordingRepository } from "./repositories/recordings.js";
import { createRequestNonceRepository } from "./repositories/request-nonces.js";
import { createSealedValueRepository, createSecretRepository } from "./repositories/secrets.js";
import { createServiceAccountRepository } from "./repositories/service-accounts.js";
import { createAuthSessionRepository, createRefreshTokenRepository } from "./repositories/sessions.js";
import { createSshSessionRepository } from "./repositories/ssh-sessions.js";
import { createSshStepUpRepository } from "./repositories/ssh-step-ups.js";
import {
  createOidcProviderRepository,
  createSamlProviderRepository,
  createSsoDirectoryRepository,
  createSsoLoginStateRepository,
} from "./repositories/sso.js";
import { createTargetRepository } from "./repositories/targets.js";
import { createTeamRepository } from "./repositories/teams.js";
import { createUserRepository } from "./repositories/users.js";
import { createWebhookEndpointRepository } from "./repositories/webhooks.js";
import { createWorkspaceRepository, createWorkspaceSettingsRepository } from "./repositories/workspaces.js";
import type { Database } from "./schema.js";

/**
 * Runs one repository call on the right connection (the pool, or the current transaction) and
 * translates driver errors. `write` marks statements that may fail on a constraint.
 */
export interface QueryRunner {
  read<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  write<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /**
   * Runs a compiled query on the `db` that `read`, `write` or `atCommit` passed: on the adapter's
   * direct executor when it can run now (lib/direct.ts), through Kysely otherwise.
   */
  readonly execute: ExecuteQuery;
  /**
   * Writes `step` just before the current transaction commits (in a transaction of its own when
   * there is none). The steps of one transaction run ordered by `key` (each key's steps in the
   * order they came), so transactions touching several keys take their locks in one order.
   */
  atCommit(key: string, step: (db: Kysely<Database>) => Promise<void>): Promise<void>;
}

/** Builds the repositories over a runner. */
export function createRepositories(run: QueryRunner, dialect: SqlDialectTraits): Repositories {
  return {
    users: createUserRepository(run),
    authSessions: createAuthSessionRepository(run, dialect),
    refreshTokens: createRefreshTokenRepository(run),
    oneTimeTokens: createOneTimeTokenRepository(run),
    passkeys: createPasskeyRepository(run),
    backupCodes: createBackupCodeRepository(run),
    userDevices: createUserDeviceRepository(run),
    cliLogins: createCliLoginRepository(run),
    linkedAccounts: createLinkedAccountRepository(run),
    loginThrottles: createLoginThrottleRepository(run),
    requestNonces: createRequestNonceRepository(run),
    workspaces: createWorkspaceRepository(run),
    workspaceSettings: createWorkspaceSettingsRepository(run),
    workspaceInvites: createWorkspaceInviteRepository(run),
    workspaceDomains: createWorkspaceDomainRepository(run),
    members: createMemberRepository(run, dialect),
    teams: createTeamRepository(run, dialect),
    principals: createPrincipalRepository(run, dialect),
    certificateAuthorities: createCertificateAuthorityRepository(run, dialect),
    retiredAuthorityKeys: createRetiredAuthorityKeyRepository(run),
    issuedCertificates: createIssuedCertificateRepository(run, dialect),
    targets: createTargetRepository(run, dialect),
    serviceAccounts: createServiceAccountRepository(run, dialect),
    daemons: createDaemonRepository(run),
    enrollTokens: createEnrollTokenRepository(run),
    daemonSessions: createDaemonSessionRepository(run),
    sshSessions: createSshSessionRepository(run),
    recordings: createRecordingRepository(run),
    auditEvents: createAuditEventRepository(run, dialect),
    auditCheckpoints: createAuditCheckpointRepository(run),
    oidcProviders: createOidcProviderRepository(run),
    samlProviders: createSamlProviderRepository(run),
    ssoLoginStates: createSsoLoginStateRepository(run),
    ssoDirectory: createSsoDirectoryRepository(run),
    billingAccounts: createBillingAccountRepository(run),
    workspaceUsage: createWorkspaceUsageRepository(run),
    secrets: createSecretRepository(run),
    sealedValues: createSealedValueRepository(run),
    accessRequests: createAccessRequestRepository(run),
    webhookEndpoints: createWebhookEndpointRepository(run),
    sshStepUps: createSshStepUpRepository(run),
  };
}

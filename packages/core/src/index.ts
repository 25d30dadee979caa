/**
 * @wap/core: every operation, validation rule and SSH/X.509 issuance of the Workspace Access
 * Platform, against a storage interface. No HTTP, no SQL driver.
 *
 * The API messages and service descriptors are in `@wap/api`; the storage port for adapter
 * authors in `@wap/core/storage`; the adapter contract suite in `@wap/core/testing`. The exports
 * below come in two parts: for applications first, then what transports and adapters need, which
 * is not covered by semantic versioning.
 *
 * @module
 */

// For applications: embedding the platform, configuring it, and handling what it answers.

export type { Permission, RoleDefinition } from "./access/permissions.js";
export { permissions, roleAllows, roles } from "./access/permissions.js";
export type { AuditAction } from "./audit/actions.js";
export { auditActions } from "./audit/actions.js";
export type { ChainBreak, ChainLink } from "./audit/chain.js";
export { auditEntryContent, chainedFields, chainHash, findChainBreak, genesisHash } from "./audit/chain.js";
export { signAuditCheckpoints } from "./audit/checkpoints.js";
export type { AuditExport, AuditExportFormat, AuditExportOptions } from "./audit/export.js";
export { defaultAuditExportOptions, exportAuditLog } from "./audit/export.js";
export type { AccountConfig } from "./auth/account-config.js";
export { defaultAccountConfig } from "./auth/account-config.js";
export type { PasswordHasher } from "./auth/passwords.js";
export { createArgon2PasswordHasher } from "./auth/passwords.js";
export type { BillingProvider, BillingWebhookEvent, SubscriptionState } from "./billing/provider.js";
export { BillingWebhookError, selfHostedBilling } from "./billing/provider.js";
export type { StripeBillingOptions } from "./billing/stripe.js";
export { createStripeBillingProvider } from "./billing/stripe.js";
export type {
  AnonymousCaller,
  CallContext,
  Caller,
  CallerKind,
  DaemonCaller,
  ServiceAccountCaller,
  UserCaller,
  WorkspaceRole,
} from "./context.js";
export { actorOf, anonymous, createCallContext, workspaceRoles } from "./context.js";
export type { KeyStore, MasterKey, MasterKeyStoreOptions } from "./crypto/key-store.js";
export {
  createMasterKeyStore,
  formatMasterKey,
  generateMasterKey,
  InvalidMasterKeyError,
  parseMasterKey,
  SealedDataError,
} from "./crypto/key-store.js";
export type { Pkcs11Token, Pkcs11TokenOptions } from "./crypto/pkcs11/token.js";
export { openPkcs11Token, Pkcs11TokenError } from "./crypto/pkcs11/token.js";
export type { KrlCertificates, KrlParams } from "./crypto/ssh/krl.js";
export { encodeKrl } from "./crypto/ssh/krl.js";
export type { DnsTxtResolver } from "./domains/dns.js";
export type { DeclaredReason, ErrorArea, ErrorReason, ReasonFor } from "./error-reasons/registry.js";
export { declaredReasons, errorReasons, reasonDeclaration } from "./error-reasons/registry.js";
export type { ErrorCode, FieldViolation, PlatformErrorOptions } from "./errors.js";
export {
  AlreadyExistsError,
  DeadlineExceededError,
  errorCodes,
  FailedPreconditionError,
  InvalidArgumentError,
  isPlatformError,
  NotFoundError,
  PermissionDeniedError,
  PlatformError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  UnimplementedError,
} from "./errors.js";
export type { EventBus, EventHandler, EventPayload } from "./events/event-bus.js";
export { createInProcessEventBus } from "./events/event-bus.js";
export type { WorkspaceEvent } from "./events/workspace-events.js";
export type { OutboundFetch, OutboundFetchOptions } from "./lib/outbound-fetch.js";
export {
  createOutboundFetch,
  isAllowedAddress,
  OutboundFetchError,
  parseNetworks,
} from "./lib/outbound-fetch.js";
export type { LicenseOptions, LicensePayload, LicenseStatus } from "./license/license.js";
export { freePlan, inspectLicense, licensePrefix, signLicense } from "./license/license.js";
export type { Mailer, MailMessage } from "./mail/mailer.js";
export type { OutboxMailerOptions, OutboxWrite } from "./mail/outbox.js";
export { createOutboxMailer } from "./mail/outbox.js";
export type { SmtpMailerOptions } from "./mail/smtp.js";
export { createSmtpMailer } from "./mail/smtp.js";
export type { IntegrationServices } from "./operations/integrations.js";
export type { PlatformConfig, PlatformObserver, Services } from "./operations/services.js";
export type { CredentialSource, Credentials } from "./platform/authenticate.js";
export { defaultPlatformConfig } from "./platform/default-config.js";
export type { Platform, PlatformOptions } from "./platform/platform.js";
export { createPlatform, procedureOf } from "./platform/platform.js";
export type { ResealResult } from "./platform/reseal-secrets.js";
export { checkSealedValues, resealSecrets } from "./platform/reseal-secrets.js";
export type { FieldBound, RequestBounds } from "./platform/validation-table.js";
export { validationBounds } from "./platform/validation-table.js";
export type { RecordingConfig } from "./recordings/config.js";
export { defaultRecordingConfig } from "./recordings/config.js";
export type { Clock, Random } from "./runtime.js";
export { createManualClock, systemClock, systemRandom } from "./runtime.js";
export type { Bound, FoundBound } from "./validation/bound.js";
export { describeBound } from "./validation/describe.js";
export { apiVersion, platformVersion } from "./version.js";
export type { WorkspaceQuotaConfig } from "./workspaces/quotas.js";
export { defaultWorkspaceQuotaConfig } from "./workspaces/quotas.js";
export { defaultTokenLifetimes } from "./workspaces/settings.js";

// For transport and adapter authors (the server package, other adapters): the pieces a transport
// needs around `Platform` (daemon and device protocols, streams, SSO browser flows, events).
// Not covered by semantic versioning: they may change in any release.

export type { RequestFacts } from "./audit/record.js";
export { assertPasswordLoginAllowed, ssoEnforcedFor } from "./auth/directory.js";
export type { BillingWebhookResult } from "./billing/webhook.js";
export { handleBillingWebhook } from "./billing/webhook.js";
export type { PublishedTrust, TrustDocument } from "./certificates/publication.js";
export { publishedTrust, trustDocuments } from "./certificates/publication.js";
export { publicCrl, revocationListOf } from "./certificates/revocation.js";
export { daemonSideEndReasons, sessionDeadlineError } from "./daemon-streams/session-stream.js";
export type { SignedRequestInput } from "./daemons/authenticate.js";
export { authenticateDaemon, authenticateSignedRequest } from "./daemons/authenticate.js";
export { notifyDaemonsOfChanges } from "./daemons/change-notifications.js";
export type { ConnectResponseInit } from "./daemons/control.js";
export { closeControlStream, heartbeatAck, openControlStream } from "./daemons/control.js";
export { daemonHostnameHeader } from "./daemons/enrollment.js";
export type { DaemonEvent, NotificationKind, SessionEvent } from "./daemons/events.js";
export {
  daemonTopic,
  parseDaemonEvent,
  parseSessionEvent,
  sessionTopic,
  toConnectResponse,
} from "./daemons/events.js";
export type {
  DaemonStreamHost,
  HeldControlStream,
  SessionStreamMessage,
  TerminalRelay,
  TerminalRelayHost,
} from "./daemons/stream-hosts.js";
export type { DeviceChallengeInput, PlatformChallenge } from "./devices/challenge.js";
export { authenticateDevice, challengeSignatureValid, parsePlatformChallenge } from "./devices/challenge.js";
export type { CliLoginRequest, PendingCliLogin } from "./devices/cli-login.js";
export { cliLoginHeaders, cliLoginStream, startCliLogin } from "./devices/cli-login.js";
export { httpStatusOfCode } from "./error-reasons/http-status.js";
export { genericReason, shuttingDownError } from "./errors.js";
export type { AccessWatchOptions } from "./events/access-watch.js";
export { accountsTopic, watchAccess } from "./events/access-watch.js";
export { createSubscriberTable, encodeEvent, maxEventBytes } from "./events/event-bus.js";
export type {
  AnyBidiStreamingOperation,
  AnyStreamingOperation,
  BidiStreamingOperation,
  BidiStreamOptions,
  StreamingOperation,
  StreamObserver,
} from "./events/streaming-operation.js";
export { workspaceEventOf, workspaceTopic } from "./events/workspace-events.js";
export type { Access, AnyOperation, Operation } from "./operations/operation.js";
export type { StreamHosts } from "./platform/platform.js";
export { publicProcedures } from "./platform/registry.js";
export type { SessionRecorder, SessionRecordingOptions } from "./recordings/recorder.js";
export { startSessionRecording } from "./recordings/recorder.js";
export type { SessionRelayStatus } from "./sessions/lifecycle.js";
export {
  abandonStaleSessions,
  attachSession,
  claimSession,
  endSession,
  recheckSessionAccess,
  sessionReadyTimeoutSeconds,
  sessionRelayOf,
} from "./sessions/lifecycle.js";
export { openSshWatch, recheckSshWatch, sshWatchEndOf } from "./sessions/ssh-watch.js";
export type { SsoTarget } from "./sso/find-provider.js";
export type { SsoSignIn } from "./sso/identity.js";
export type { BrowserBinding } from "./sso/login-state.js";
export { bindingCookieName } from "./sso/login-state.js";
export type { SsoFinish, SsoStart } from "./sso/oidc.js";
export { beginOidcSignIn, finishOidcSignIn } from "./sso/oidc.js";
export type { SsoOptions } from "./sso/options.js";
export { ssoUrls } from "./sso/options.js";
export { beginSamlSignIn, finishSamlSignIn, samlServiceProviderMetadata } from "./sso/saml.js";
export type { WebhookOptions } from "./webhooks/options.js";

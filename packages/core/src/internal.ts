/**
 * @wap/core/internal: for transport and adapter authors (the server package, the storage
 * adapters): the pieces a transport needs around `Platform` (daemon and device protocols,
 * streams, SSO browser flows, events, the audit chain, the registry of RPCs). Not covered by
 * semantic versioning: they may change in any release. Applications use `@wap/core`.
 *
 * @module
 */
export { roleAllows } from "./access/permissions.js";
export type { AuditAction } from "./audit/actions.js";
export { auditActions } from "./audit/actions.js";
export type { ChainBreak, ChainLink } from "./audit/chain.js";
export { auditEntryContent, chainedFields, chainHash, findChainBreak, genesisHash } from "./audit/chain.js";
export { signAuditCheckpoints } from "./audit/checkpoints.js";
export type { AuditExport, AuditExportFormat } from "./audit/export.js";
export { defaultAuditExportOptions, exportAuditLog } from "./audit/export.js";
export type { RequestFacts } from "./audit/record.js";
export { defaultAccountConfig } from "./auth/account-config.js";
export { assertPasswordLoginAllowed, ssoEnforcedFor } from "./auth/directory.js";
export type { BillingWebhookEvent, SubscriptionState } from "./billing/provider.js";
export { BillingWebhookError, selfHostedBilling } from "./billing/provider.js";
export type { BillingWebhookResult } from "./billing/webhook.js";
export { handleBillingWebhook } from "./billing/webhook.js";
export type { PublishedTrust, TrustDocument } from "./certificates/publication.js";
export { publishedTrust, trustDocuments } from "./certificates/publication.js";
export { publicCrl, revocationListOf } from "./certificates/revocation.js";
export type { AnonymousCaller, DaemonCaller, ServiceAccountCaller, UserCaller } from "./context.js";
export { actorOf, workspaceRoles } from "./context.js";
export type { KrlCertificates, KrlParams } from "./crypto/ssh/krl.js";
export { encodeKrl } from "./crypto/ssh/krl.js";
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
export type { DeclaredReason, ErrorArea, ReasonFor } from "./error-reasons/registry.js";
export { declaredReasons, errorReasons, reasonDeclaration } from "./error-reasons/registry.js";
export { genericReason, shuttingDownError } from "./errors.js";
export type { AccessWatchOptions } from "./events/access-watch.js";
export { accountsTopic, watchAccess } from "./events/access-watch.js";
export type { EventHandler, EventPayload } from "./events/event-bus.js";
export { createSubscriberTable, encodeEvent, maxEventBytes } from "./events/event-bus.js";
export type {
  AnyBidiStreamingOperation,
  AnyStreamingOperation,
  BidiStreamingOperation,
  BidiStreamOptions,
  StreamingOperation,
  StreamObserver,
} from "./events/streaming-operation.js";
export type { WorkspaceEvent } from "./events/workspace-events.js";
export { workspaceEventOf, workspaceTopic } from "./events/workspace-events.js";
export type { OutboundFetch, OutboundFetchOptions } from "./lib/outbound-fetch.js";
export {
  createOutboundFetch,
  isAllowedAddress,
  OutboundFetchError,
  parseNetworks,
} from "./lib/outbound-fetch.js";
export { freePlan, licensePrefix } from "./license/license.js";
export type { OutboxWrite } from "./mail/outbox.js";
export type { IntegrationServices } from "./operations/integrations.js";
export type { Access, AnyOperation, Operation } from "./operations/operation.js";
export type { Services } from "./operations/services.js";
export type { CredentialSource, Credentials } from "./platform/authenticate.js";
export type { StreamHosts } from "./platform/platform.js";
export { procedureOf } from "./platform/platform.js";
export { publicProcedures } from "./platform/registry.js";
export { defaultRecordingConfig } from "./recordings/config.js";
export type { SessionRecorder, SessionRecordingOptions } from "./recordings/recorder.js";
export { startSessionRecording } from "./recordings/recorder.js";
export { createManualClock } from "./runtime.js";
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
export { ssoUrls } from "./sso/options.js";
export { beginSamlSignIn, finishSamlSignIn, samlServiceProviderMetadata } from "./sso/saml.js";
export { defaultWorkspaceQuotaConfig } from "./workspaces/quotas.js";
export { defaultTokenLifetimes } from "./workspaces/settings.js";

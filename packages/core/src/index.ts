/**
 * @wap/core: every operation, validation rule and SSH/X.509 issuance of the Workspace Access
 * Platform, against a storage interface. No HTTP, no SQL driver.
 *
 * This entry is for applications: embedding the platform (`createPlatform`), configuring it, and
 * handling what it answers. The API messages and service descriptors are in `@wap/api`; the
 * storage port for adapter authors in `@wap/core/storage`; the adapter contract suite in
 * `@wap/core/testing`; what transports and adapters need around `Platform` in
 * `@wap/core/internal`, which is not covered by semantic versioning.
 *
 * @module
 */
export type { Permission, RoleDefinition } from "./access/permissions.js";
export { permissions, roles } from "./access/permissions.js";
export type { AuditExportOptions } from "./audit/export.js";
export type { AccountConfig } from "./auth/account-config.js";
export type { PasswordHasher } from "./auth/passwords.js";
export { createArgon2PasswordHasher } from "./auth/passwords.js";
export type { BillingProvider } from "./billing/provider.js";
export type { StripeBillingOptions } from "./billing/stripe.js";
export { createStripeBillingProvider } from "./billing/stripe.js";
export type { CallContext, Caller, CallerKind, WorkspaceRole } from "./context.js";
export { anonymous, createCallContext } from "./context.js";
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
export type { DnsTxtResolver } from "./domains/dns.js";
export type { ErrorReason } from "./error-reasons/registry.js";
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
export type { EventBus } from "./events/event-bus.js";
export { createInProcessEventBus } from "./events/event-bus.js";
export type { LicenseOptions, LicensePayload, LicenseStatus } from "./license/license.js";
export { inspectLicense, signLicense } from "./license/license.js";
export type { Mailer, MailMessage } from "./mail/mailer.js";
export type { OutboxMailerOptions } from "./mail/outbox.js";
export { createOutboxMailer } from "./mail/outbox.js";
export type { SmtpMailerOptions } from "./mail/smtp.js";
export { createSmtpMailer } from "./mail/smtp.js";
export type { PlatformConfig, PlatformObserver } from "./operations/services.js";
export { defaultPlatformConfig } from "./platform/default-config.js";
export type { Platform, PlatformOptions } from "./platform/platform.js";
export { createPlatform } from "./platform/platform.js";
export type { ResealResult } from "./platform/reseal-secrets.js";
export { checkSealedValues, resealSecrets } from "./platform/reseal-secrets.js";
export type { FieldBound, RequestBounds } from "./platform/validation-table.js";
export { validationBounds } from "./platform/validation-table.js";
export type { RecordingConfig } from "./recordings/config.js";
export type { Clock, Random } from "./runtime.js";
export { systemClock, systemRandom } from "./runtime.js";
export type { SsoOptions } from "./sso/options.js";
export type { Storage } from "./storage/storage.js";
export type { Bound, FoundBound } from "./validation/bound.js";
export { describeBound } from "./validation/describe.js";
export { apiVersion, platformVersion } from "./version.js";
export type { WebhookOptions } from "./webhooks/options.js";
export type { WorkspaceQuotaConfig } from "./workspaces/quotas.js";

import type { AccessRequestConfig } from "../access-requests/config.js";
import type { AccessTokens } from "../auth/access-tokens.js";
import type { AccountConfig } from "../auth/account-config.js";
import type { PasswordHasher } from "../auth/passwords.js";
import type { ServiceAccountTokens } from "../auth/service-account-tokens.js";
import type { KeyStore } from "../crypto/key-store.js";
import type { Pkcs11Token } from "../crypto/pkcs11/token.js";
import type { DaemonStreamHost, TerminalRelayHost } from "../daemons/stream-hosts.js";
import type { DnsTxtResolver } from "../domains/dns.js";
import type { EventBus } from "../events/event-bus.js";
import type { Mailer } from "../mail/mailer.js";
import type { PlatformState } from "../platform/platform-state.js";
import type { RecordingConfig } from "../recordings/config.js";
import type { Clock, Random } from "../runtime.js";
import type { KeyAlgorithm } from "../storage/certificate-authorities.js";
import type { IssuedCertificateKind } from "../storage/certificates.js";
import type { Storage } from "../storage/storage.js";
import type { WorkspaceQuotaConfig } from "../workspaces/quotas.js";
import type { IntegrationServices } from "./integrations.js";

/** Settings of a platform instance; every field has a documented default. */
export interface PlatformConfig
  extends AccountConfig,
    RecordingConfig,
    WorkspaceQuotaConfig,
    AccessRequestConfig {
  /** Lifetime of PASETO access tokens. Default 900 s (15 minutes). */
  readonly accessTokenTtlSeconds: number;
  /** Lifetime of a login session and its refresh tokens. Default 30 days. */
  readonly refreshTokenTtlSeconds: number;
  /** How often a service account's `lastUsedAt` is written at most. Default 60 s. */
  readonly lastUsedResolutionSeconds: number;
}

/**
 * Told of what happened, for metrics. Called after the fact, synchronously; it must not throw or
 * block (a counter increment, not I/O).
 */
export interface PlatformObserver {
  /** A certificate was issued and recorded. */
  certificateIssued?(kind: IssuedCertificateKind, caKeyType: KeyAlgorithm): void;
}

/** The dependencies operations run on; built once by `createPlatform`. */
export interface Services extends IntegrationServices {
  readonly storage: Storage;
  readonly clock: Clock;
  readonly random: Random;
  readonly keyStore: KeyStore;
  /** The PKCS#11 token authorities with `keyStorage` pkcs11 keep their keys in; none when not configured. */
  readonly pkcs11Token?: Pkcs11Token;
  readonly accessTokens: AccessTokens;
  readonly serviceAccountTokens: ServiceAccountTokens;
  readonly passwords: PasswordHasher;
  readonly config: PlatformConfig;
  /**
   * Tells every server instance what happened. Operations do not publish their own changes:
   * the platform publishes a workspace event for each audited change once it has committed.
   */
  readonly events: EventBus;
  /** Sends account mails. Without one, flows run but no mail leaves (embedding without mail). */
  readonly mailer?: Mailer;
  /** Looks up TXT records for domain verification. Default: the system resolver. */
  readonly dns?: DnsTxtResolver;
  /** Told of issuances and the like, for metrics. */
  readonly observer?: PlatformObserver;
  /** What this platform keeps between calls (caches, queues); made once, shared with no other platform. */
  readonly state: PlatformState;
  /** The instance holding daemon control streams; without one they are refused. */
  readonly daemonStreams?: DaemonStreamHost;
  /** The instance relaying terminal sessions; without one daemon session streams are refused. */
  readonly terminalRelays?: TerminalRelayHost;
}

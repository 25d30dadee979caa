/**
 * Settings of the account flows (mail, passkeys, CLI devices, sign-in throttling), part of
 * `PlatformConfig`.
 *
 * @module
 */
import type { Services } from "../operations/services.js";

/** The account settings; every field has a documented default. */
export interface AccountConfig {
  /**
   * The public address of the web app, without a trailing slash: links in mails and the CLI's
   * verification URL point here, and passkeys are bound to its host (the WebAuthn RP ID) and
   * origin. Default `http://localhost:8080`.
   */
  readonly publicBaseUrl: string;
  /** The service name authenticators show when a passkey is created. */
  readonly webauthnRpName: string;
  /** Lifetime of an email verification link. Default 24 hours. */
  readonly emailVerificationTtlSeconds: number;
  /** Lifetime of a password reset link. Default 1 hour. */
  readonly passwordResetTtlSeconds: number;
  /** At most one verification or reset mail per user and purpose this often. Default 60 s. */
  readonly mailIntervalSeconds: number;
  /** Lifetime of a passkey ceremony's challenge. Default 5 minutes. */
  readonly passkeyChallengeTtlSeconds: number;
  /** How long a CLI login waits for approval. Default 10 minutes. */
  readonly cliLoginTtlSeconds: number;
  /**
   * Most CLI logins waiting for approval from one client address at once (anyone may start
   * one, and each holds a stream open). Default 10.
   */
  readonly cliLoginMaxPendingPerAddress: number;
  /** How long a CLI device stays signed in after its login. Default 90 days. */
  readonly deviceSessionTtlSeconds: number;
  /** Accepted clock difference of a signed `Platform` challenge, either way. Default 5 minutes. */
  readonly challengeWindowSeconds: number;
  /** Failed sign-ins per account before backoff starts. Default 5. */
  readonly loginFreeFailuresPerAccount: number;
  /** Failed sign-ins per client address before backoff starts. Default 50. */
  readonly loginFreeFailuresPerIp: number;
  /** The longest backoff; failures older than this are forgotten. Default 15 minutes. */
  readonly loginMaxBackoffSeconds: number;
}

export const defaultAccountConfig: AccountConfig = {
  publicBaseUrl: "http://localhost:8080",
  webauthnRpName: "Workspace Access Platform",
  emailVerificationTtlSeconds: 24 * 3600,
  passwordResetTtlSeconds: 3600,
  mailIntervalSeconds: 60,
  passkeyChallengeTtlSeconds: 300,
  cliLoginTtlSeconds: 600,
  cliLoginMaxPendingPerAddress: 10,
  deviceSessionTtlSeconds: 90 * 24 * 3600,
  challengeWindowSeconds: 300,
  loginFreeFailuresPerAccount: 5,
  loginFreeFailuresPerIp: 50,
  loginMaxBackoffSeconds: 900,
};

/** The account settings of a platform (its config, with `publicBaseUrl` normalised). */
export function accountConfig(services: Services): AccountConfig {
  return { ...services.config, publicBaseUrl: services.config.publicBaseUrl.replace(/\/+$/, "") };
}

/** An absolute link into the web app at `publicBaseUrl`, e.g. `/reset-password?token=...`. */
export function accountLink(config: AccountConfig, path: string, params: Record<string, string>): string {
  const url = new URL(`${config.publicBaseUrl}${path}`);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.toString();
}

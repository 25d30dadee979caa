/**
 * Single-use, expiring secrets (email links, WebAuthn challenges): minted here, stored as
 * SHA-256, consumed atomically by storage.
 *
 * @module
 */
import { encodeBase64Url } from "../lib/base64.js";
import type { Services } from "../operations/services.js";
import type { OneTimeTokenPurpose, OneTimeTokenRecord } from "../storage/one-time-tokens.js";
import type { Repositories } from "../storage/storage.js";
import { hashSecret } from "./service-account-tokens.js";

/** Mints a 256-bit token, stores its hash and returns the token (base64url, 43 characters). */
export async function issueOneTimeToken(
  tx: Repositories,
  services: Services,
  options: {
    purpose: OneTimeTokenPurpose;
    userId: string | null;
    data?: Record<string, string>;
    ttlSeconds: number;
    now: Date;
    /** The secret, when the caller made it (a WebAuthn challenge); otherwise a fresh one. */
    token?: string;
  },
): Promise<string> {
  const token = options.token ?? encodeBase64Url(services.random.bytes(32));
  await tx.oneTimeTokens.insert({
    id: services.random.uuid(),
    purpose: options.purpose,
    tokenHash: hashSecret(token),
    userId: options.userId,
    data: options.data ?? {},
    createdAt: options.now,
    expiresAt: new Date(options.now.getTime() + options.ttlSeconds * 1000),
    consumedAt: null,
  });
  return token;
}

/** Consumes `token` for `purpose`: the record exactly once, null when unknown, expired or spent. */
export function consumeOneTimeToken(
  tx: Repositories,
  purpose: OneTimeTokenPurpose,
  token: string,
  now: Date,
): Promise<OneTimeTokenRecord | null> {
  return tx.oneTimeTokens.consume(purpose, hashSecret(token), now);
}

/** True when a token of `purpose` went to `userId` less than `intervalSeconds` ago (mail flooding). */
export async function issuedRecently(
  services: Services,
  userId: string,
  purpose: OneTimeTokenPurpose,
  now: Date,
  intervalSeconds: number,
): Promise<boolean> {
  const latest = await services.storage.oneTimeTokens.latestForUser(userId, purpose);
  return latest !== null && now.getTime() - latest.createdAt.getTime() < intervalSeconds * 1000;
}

import { createHash, timingSafeEqual } from "node:crypto";
import { toHex } from "../lib/bytes.js";
import type { Random } from "../runtime.js";

/**
 * Service-account bearer tokens: `wapsa_<account id>_<64 hex digits>`. The account id is in the
 * clear so the server finds the row without scanning; only SHA-256 of the secret part is stored
 * (the secret has 256 bits of entropy, so a slow hash adds nothing).
 */
const tokenPattern = /^wapsa_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_([0-9a-f]{64})$/;

export const serviceAccountTokenPrefix = "wapsa_";

/** Makes a new token for `accountId`; returns it and the hash to store. */
export function mintServiceAccountToken(
  accountId: string,
  random: Random,
): { token: string; tokenHash: string } {
  const secret = toHex(random.bytes(32));
  return { token: `${serviceAccountTokenPrefix}${accountId}_${secret}`, tokenHash: hashSecret(secret) };
}

/** Splits a token into the account id and secret, or returns null when it is not one of ours. */
export function parseServiceAccountToken(token: string): { accountId: string; secret: string } | null {
  const match = tokenPattern.exec(token);
  if (!match) return null;
  return { accountId: match[1]!, secret: match[2]! };
}

/** Constant-time check of a presented secret against the stored hash. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = Buffer.from(hashSecret(secret), "hex");
  const stored = Buffer.from(storedHash, "hex");
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

/** SHA-256, hex: how high-entropy secrets (tokens, refresh tokens) are kept at rest. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

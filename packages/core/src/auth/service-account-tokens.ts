/**
 * Service-account bearer tokens.
 *
 * Issued now: PASETO v4.public, signed by a dedicated Ed25519 key (sealed in storage under
 * `service-account-token-signing-key`, never rotated with the access-token key, re-sealed but
 * unchanged by a master key rotation). The claims are `jti` (the token id), `sub` (the service
 * account id), `wid` (its workspace), `typ: "service_account"` and `exp` when the account expires;
 * the implicit assertion keeps any other PASETO of ours from passing as one. Only SHA-256 of the
 * whole token is stored: the server verifies the signature, finds the account's row by `sub`,
 * then compares hashes in constant time, so a deleted account's token stops at once everywhere.
 *
 * Issued before: `wapsa_<account id>_<64 hex digits>`, stored as SHA-256 of the hex part; still
 * accepted until the account expires or is deleted.
 *
 * Both kinds are unguessable (a signature only this deployment's key can make; 256 random bits),
 * so a slow hash adds nothing.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { utf8 } from "../lib/bytes.js";
import type { Random } from "../runtime.js";
import {
  createSignedTokenSigner,
  createSignedTokenVerifier,
  InvalidAccessTokenError,
  namesKey,
  type TokenProfile,
} from "../tokens/paseto.js";
import { cacheVerified } from "../tokens/verified-cache.js";
import { loadSigningKey, type SigningKeyDeps } from "./signing-keys.js";

/** The claims a service-account token asserts. */
export interface ServiceAccountTokenClaims {
  readonly tokenId: string;
  readonly accountId: string;
  readonly workspaceId: string;
  /** When the account expires; null for an account without expiry. */
  readonly expiresAt: Date | null;
}

/** Issues and checks the PASETO service-account tokens of this deployment. */
export interface ServiceAccountTokens {
  /** A new token and the hash to store in its place. */
  issue(
    claims: Omit<ServiceAccountTokenClaims, "tokenId">,
    now: Date,
    random: Random,
  ): Promise<{ token: string; tokenHash: string }>;
  /** Whether `token` names this deployment's service-account key (checks nothing else). */
  recognizes(token: string): boolean;
  /** Throws `InvalidAccessTokenError` unless the token is authentic, of this kind and unexpired. */
  verify(token: string, now: Date): Promise<ServiceAccountTokenClaims>;
}

/** The name under which the service-account token signing key is kept (sealed) in storage. */
const signingKeySecret = "service-account-token-signing-key";

export const serviceAccountTokenProfile: TokenProfile = {
  requiredClaims: ["jti", "sub", "wid", "typ"],
  implicitAssertion: utf8("wap service-account token"),
  // An account without expiry has a token without one: deleting the account ends it.
  allowNonExpiring: true,
};

export async function loadServiceAccountTokens(deps: SigningKeyDeps): Promise<ServiceAccountTokens> {
  const { privateKeyPkcs8Der, publicKeySpkiDer, keyId } = await loadSigningKey(deps, signingKeySecret);
  const signer = createSignedTokenSigner({ privateKeyPkcs8Der, keyId }, serviceAccountTokenProfile);
  const verifier = createSignedTokenVerifier(
    { keys: [{ keyId, publicKeySpkiDer }] },
    serviceAccountTokenProfile,
  );
  return {
    async issue({ accountId, workspaceId, expiresAt }, now, random) {
      const token = await signer.sign(
        { jti: random.uuid(), sub: accountId, wid: workspaceId, typ: "service_account" },
        { now, expiresAt },
      );
      return { token, tokenHash: hashSecret(token) };
    },
    recognizes: namesKey(keyId),
    // The account row is still read and the hash compared on every call (authenticate.ts).
    verify: cacheVerified(async (token, now) => {
      const { claims, exp } = await verifier.verify(token, now);
      if (claims.typ !== "service_account")
        throw new InvalidAccessTokenError("claims", "token is not a service-account token");
      return {
        tokenId: claims.jti as string,
        accountId: claims.sub as string,
        workspaceId: claims.wid as string,
        expiresAt: exp,
      };
    }),
  };
}

const legacyTokenPattern =
  /^wapsa_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_([0-9a-f]{64})$/;

/** The prefix of tokens issued before service-account tokens were PASETOs. */
export const legacyServiceAccountTokenPrefix = "wapsa_";

/** Splits a legacy token into the account id and secret, or returns null when it is not one. */
export function parseLegacyServiceAccountToken(token: string): { accountId: string; secret: string } | null {
  const match = legacyTokenPattern.exec(token);
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

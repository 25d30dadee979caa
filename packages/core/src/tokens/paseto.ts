/**
 * PASETO v4.public tokens (Ed25519), issued and checked with the `paseto` package.
 *
 * Every token carries `iss`/`aud` `wap` and an RFC 3339 `iat`; its footer is
 * `{"kid":"<signing key id>"}` so verifiers can pick the key during rotation. A kind of token (a
 * {@link TokenProfile}) names the claims it requires and may add an implicit assertion, so a
 * token of one kind never passes as another even under a shared key. Time always comes from the
 * caller.
 *
 * Access tokens carry `sub` (user id), `sid` (login session id), `typ: "access"` and `exp`.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, webcrypto } from "node:crypto";
import type { JsonValue } from "paseto";
import {
  ClaimValidationError,
  InvalidTokenError,
  type CryptoKey as PasetoCryptoKey,
  PublicProtocol,
} from "paseto";
import {
  type PublicKey,
  PublicKeyFromCryptoKey,
  type SecretKey,
  SecretKeyFromCryptoKey,
  SignFactory,
  VerifyFactory,
} from "paseto/v4/public";
import { decodeBase64Url } from "../lib/base64.js";
import { fromUtf8, utf8 } from "../lib/bytes.js";

const ISSUER = "wap";
const AUDIENCE = "wap";
const PREFIX = "v4.public.";
/** Far above any token we issue (~300 bytes); bounds the work an attacker can ask for. */
const MAX_TOKEN_LENGTH = 4096;
/** A v4.public payload is the message followed by a 64-byte Ed25519 signature. */
const SIGNATURE_BYTES = 64;

const v4 = new PublicProtocol(SignFactory, VerifyFactory);

/** The claims an access token asserts. */
export interface AccessTokenClaims {
  /** The user id. */
  readonly sub: string;
  /** The login session (refresh-token family) the token belongs to. */
  readonly sid: string;
  readonly typ: "access";
}

/** Claims of a verified token, with its validity. */
export type VerifiedAccessToken = AccessTokenClaims & { readonly iat: Date; readonly exp: Date };

/** Why a token was refused. */
export type InvalidAccessTokenReason = "expired" | "malformed" | "signature" | "claims" | "unknown_key";

/**
 * The one error token verification throws, whatever went wrong; the library's own errors are
 * kept as `cause` for logs.
 */
export class InvalidAccessTokenError extends Error {
  readonly reason: InvalidAccessTokenReason;

  constructor(reason: InvalidAccessTokenReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.reason = reason;
  }
}

export interface AccessTokenSigner {
  readonly keyId: string;
  sign(
    claims: AccessTokenClaims,
    options: { readonly now: Date; readonly ttlSeconds: number },
  ): Promise<string>;
}

export interface AccessTokenVerifier {
  verify(token: string, now: Date): Promise<VerifiedAccessToken>;
}

export interface AccessTokenSignerOptions {
  /** Ed25519 private key, PKCS#8 DER. */
  readonly privateKeyPkcs8Der: Uint8Array;
  /** Put in the footer; verifiers look the public key up by it. */
  readonly keyId: string;
}

export interface AccessTokenVerifierOptions {
  /** Every key a valid token may be signed with: the current one and any still in rotation. */
  readonly keys: ReadonlyArray<{ readonly keyId: string; readonly publicKeySpkiDer: Uint8Array }>;
  /**
   * How far in the future `iat` may lie, for instances whose clocks differ slightly. Default 5.
   * Expiry is never stretched: a token is refused from the instant `exp` is reached.
   */
  readonly clockSkewSeconds?: number;
}

function assertKeyId(keyId: string): void {
  if (typeof keyId !== "string" || keyId === "" || keyId.length > 128) {
    throw new TypeError("keyId must be a non-empty string of at most 128 characters");
  }
}

/** Fails at construction, not on the first request, when configuration holds a non-Ed25519 key. */
function assertEd25519(der: Uint8Array, kind: "pkcs8" | "spki"): void {
  let type: string | undefined;
  try {
    const key = Buffer.from(der);
    type = (
      kind === "pkcs8"
        ? createPrivateKey({ key, format: "der", type: "pkcs8" })
        : createPublicKey({ key, format: "der", type: "spki" })
    ).asymmetricKeyType;
  } catch (cause) {
    throw new TypeError(`access token key is not a valid ${kind} DER key`, { cause });
  }
  if (type !== "ed25519") throw new TypeError(`access token keys must be Ed25519 (got ${type})`);
}

function footerFor(keyId: string): Uint8Array {
  return utf8(JSON.stringify({ kid: keyId }));
}

/** What sets one kind of token apart: its required claims and what it is bound to. */
export interface TokenProfile {
  /** Claims a token must carry besides `iss`, `aud` and `iat`. */
  readonly requiredClaims: readonly string[];
  /** Authenticated with the token but never written in it. */
  readonly implicitAssertion?: Uint8Array;
  /** Tokens of this kind may lack `exp` (they then live until revoked). */
  readonly allowNonExpiring?: boolean;
}

/** Signs claims as tokens of one profile. */
export interface SignedTokenSigner {
  readonly keyId: string;
  /** `expiresAt: null` (allowed by the profile only) issues a token without `exp`. */
  sign(
    claims: Readonly<Record<string, string>>,
    options: { readonly now: Date; readonly expiresAt: Date | null },
  ): Promise<string>;
}

/** A verified token's claims (strings as signed), with its validity. */
export interface VerifiedToken {
  readonly claims: Readonly<Record<string, unknown>>;
  readonly iat: Date;
  readonly exp: Date | null;
}

export interface SignedTokenVerifier {
  verify(token: string, now: Date): Promise<VerifiedToken>;
}

/** Creates a signer of `profile` tokens for one Ed25519 key. */
export function createSignedTokenSigner(
  options: AccessTokenSignerOptions,
  profile: TokenProfile,
): SignedTokenSigner {
  const { keyId } = options;
  assertKeyId(keyId);
  assertEd25519(options.privateKeyPkcs8Der, "pkcs8");
  const footer = footerFor(keyId);
  let secretKey: Promise<SecretKey> | undefined;
  // paseto derives the public half by exporting a JWK: Node 20 has no SubtleCrypto.getPublicKey,
  // so the CryptoKey must be extractable. It never leaves this closure.
  const loadKey = () => {
    secretKey ??= webcrypto.subtle
      .importKey("pkcs8", options.privateKeyPkcs8Der, { name: "Ed25519" }, true, ["sign"])
      .then((key) => SecretKeyFromCryptoKey(key as PasetoCryptoKey));
    return secretKey;
  };

  return {
    keyId,
    async sign(claims, { now, expiresAt }) {
      if (expiresAt === null && !profile.allowNonExpiring) throw new TypeError("these tokens must expire");
      if (expiresAt !== null && !(expiresAt.getTime() > now.getTime()))
        throw new RangeError("expiresAt must be after now");
      for (const name of profile.requiredClaims) {
        if (name !== "exp" && !claims[name]) throw new TypeError(`${name} must not be empty`);
      }
      const payload: Record<string, JsonValue> = { ...claims, iss: ISSUER, aud: AUDIENCE };
      if (expiresAt !== null) payload.exp = rfc3339(expiresAt);
      return v4.Sign(await loadKey(), payload, {
        now,
        footer,
        ...(expiresAt === null && { nonExpiring: true }),
        ...(profile.implicitAssertion && { implicitAssertion: profile.implicitAssertion }),
      });
    },
  };
}

/**
 * Creates an access token signer for one Ed25519 key.
 *
 * @example
 * const signer = createAccessTokenSigner({ privateKeyPkcs8Der, keyId: "2025-01" });
 * const token = await signer.sign({ sub: userId, sid: sessionId, typ: "access" }, { now: clock.now(), ttlSeconds: 900 });
 */
export function createAccessTokenSigner(options: AccessTokenSignerOptions): AccessTokenSigner {
  const signer = createSignedTokenSigner(options, accessTokenProfile);
  return {
    keyId: signer.keyId,
    async sign(claims, { now, ttlSeconds }) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)
        throw new RangeError("ttlSeconds must be a positive integer");
      if (claims.typ !== "access") throw new TypeError('typ must be "access"');
      return signer.sign(
        { sub: claims.sub, sid: claims.sid, typ: claims.typ },
        { now, expiresAt: new Date(now.getTime() + ttlSeconds * 1000) },
      );
    },
  };
}

const accessTokenProfile: TokenProfile = { requiredClaims: ["sub", "sid", "typ", "exp"] };

/**
 * Checks the framing and reads the key id. The library reports a malformed token with the same
 * error class as a bad signature, and its footer decoding may accept non-canonical base64, so
 * both segments are decoded strictly here and the footer must be exactly what we write.
 */
function readKeyId(token: string): string {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH || !token.startsWith(PREFIX)) {
    throw new InvalidAccessTokenError("malformed", "not a v4.public token");
  }
  const parts = token.slice(PREFIX.length).split(".");
  if (parts.length !== 2) throw new InvalidAccessTokenError("malformed", "token has no key id footer");
  const payload = decodeBase64Url(parts[0]!);
  if (payload === undefined || payload.length <= SIGNATURE_BYTES) {
    throw new InvalidAccessTokenError("malformed", "token payload is not valid");
  }
  const footerBytes = decodeBase64Url(parts[1]!);
  let footer: unknown;
  try {
    footer = footerBytes === undefined ? undefined : JSON.parse(fromUtf8(footerBytes));
  } catch (cause) {
    throw new InvalidAccessTokenError("malformed", "token footer is not valid", { cause });
  }
  const kid = typeof footer === "object" && footer !== null ? (footer as { kid?: unknown }).kid : undefined;
  if (typeof kid !== "string" || !equalBytes(footerBytes!, footerFor(kid))) {
    throw new InvalidAccessTokenError("malformed", "token footer is not valid");
  }
  return kid;
}

/**
 * Whether `token` is a v4.public token whose footer names `keyId`, told from its last segment
 * alone: we write footers canonically and verification accepts no other form, so comparing the
 * text is enough to choose the verifier, and the token is not decoded twice on every call.
 */
export function namesKey(keyId: string): (token: string) => boolean {
  const ending = `.${Buffer.from(footerFor(keyId)).toString("base64url")}`;
  return (token) =>
    typeof token === "string" &&
    token.length <= MAX_TOKEN_LENGTH &&
    token.startsWith(PREFIX) &&
    token.endsWith(ending) &&
    token.indexOf(".", PREFIX.length) === token.length - ending.length;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** RFC 3339, as the library writes `iat`: fractions of a second only when there are some. */
const rfc3339 = (date: Date): string => date.toISOString().replace(/\.000Z$/, "Z");

function claimDate(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Creates a verifier of `profile` tokens signed by any of `keys`, chosen by the footer's `kid`. */
export function createSignedTokenVerifier(
  options: AccessTokenVerifierOptions,
  profile: TokenProfile,
): SignedTokenVerifier {
  const clockSkewSeconds = options.clockSkewSeconds ?? 5;
  if (!(clockSkewSeconds >= 0)) throw new RangeError("clockSkewSeconds must not be negative");
  const keys = new Map<string, { readonly spki: Uint8Array; key?: Promise<PublicKey> }>();
  for (const { keyId, publicKeySpkiDer } of options.keys) {
    assertKeyId(keyId);
    if (keys.has(keyId)) throw new TypeError(`duplicate keyId ${keyId}`);
    assertEd25519(publicKeySpkiDer, "spki");
    keys.set(keyId, { spki: publicKeySpkiDer });
  }

  const loadKey = (entry: { readonly spki: Uint8Array; key?: Promise<PublicKey> }) => {
    entry.key ??= webcrypto.subtle
      .importKey("spki", entry.spki, { name: "Ed25519" }, true, ["verify"])
      .then((key) => PublicKeyFromCryptoKey(key as PasetoCryptoKey));
    return entry.key;
  };

  async function verify(token: string, now: Date): Promise<VerifiedToken> {
    const kid = readKeyId(token);
    const entry = keys.get(kid);
    if (entry === undefined)
      throw new InvalidAccessTokenError("unknown_key", "token is signed with an unknown key");

    let claims: Record<string, unknown>;
    try {
      const result = await v4.Verify(await loadKey(entry), token, {
        now,
        // Applies to iat (and nbf); exp is checked strictly below.
        clockTolerance: clockSkewSeconds,
        issuer: ISSUER,
        audience: AUDIENCE,
        footer: footerFor(kid),
        requiredClaims: ["iat", ...profile.requiredClaims],
        ...(profile.allowNonExpiring && { allowNonExpiring: true }),
        ...(profile.implicitAssertion && { implicitAssertion: profile.implicitAssertion }),
      });
      claims = result.claims;
    } catch (cause) {
      if (cause instanceof ClaimValidationError) {
        if (cause.claim === "exp")
          throw new InvalidAccessTokenError("expired", "token has expired", { cause });
        throw new InvalidAccessTokenError("claims", "token claims are not valid", { cause });
      }
      if (cause instanceof InvalidTokenError) {
        // The framing was checked above, so what is left is authentication.
        throw new InvalidAccessTokenError("signature", "token signature is not valid", { cause });
      }
      throw new InvalidAccessTokenError("malformed", "token could not be verified", { cause });
    }

    const exp = claims.exp === undefined && profile.allowNonExpiring ? null : claimDate(claims.exp);
    const iat = claimDate(claims.iat);
    if (exp === undefined || iat === undefined)
      throw new InvalidAccessTokenError("claims", "token has no valid iat/exp");
    // The library still accepts a token at exactly exp, and stretches exp by the clock tolerance.
    if (exp !== null && now.getTime() >= exp.getTime())
      throw new InvalidAccessTokenError("expired", "token has expired");
    for (const name of profile.requiredClaims) {
      const value = claims[name];
      if (typeof value !== "string" || value === "")
        throw new InvalidAccessTokenError("claims", `token claim ${name} is not valid`);
    }
    return { claims, iat, exp };
  }

  return {
    async verify(token, now) {
      try {
        return await verify(token, now);
      } catch (error) {
        if (error instanceof InvalidAccessTokenError) throw error;
        throw new InvalidAccessTokenError("malformed", "token could not be verified", { cause: error });
      }
    },
  };
}

/**
 * Creates a verifier that accepts access tokens signed by any of `keys`, chosen by the footer's `kid`.
 *
 * @example
 * const verifier = createAccessTokenVerifier({ keys: [{ keyId: "2025-01", publicKeySpkiDer }] });
 * const { sub, sid } = await verifier.verify(bearer, clock.now());
 */
export function createAccessTokenVerifier(options: AccessTokenVerifierOptions): AccessTokenVerifier {
  const verifier = createSignedTokenVerifier(options, accessTokenProfile);
  return {
    async verify(token, now) {
      const { claims, iat, exp } = await verifier.verify(token, now);
      if (claims.typ !== "access")
        throw new InvalidAccessTokenError("claims", "token is not an access token");
      return { sub: claims.sub as string, sid: claims.sid as string, typ: "access", iat, exp: exp! };
    },
  };
}

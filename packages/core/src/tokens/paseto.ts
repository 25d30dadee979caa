/**
 * PASETO v4.public access tokens (Ed25519), issued and checked with the `paseto` package.
 *
 * A token carries `sub` (user id), `sid` (login session id), `typ: "access"`, `iss`/`aud` `wap`,
 * and RFC 3339 `iat`/`exp`; its footer is `{"kid":"<signing key id>"}` so verifiers can pick the
 * key during rotation. Time always comes from the caller.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, webcrypto } from "node:crypto";
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

/**
 * Creates an access token signer for one Ed25519 key.
 *
 * @example
 * const signer = createAccessTokenSigner({ privateKeyPkcs8Der, keyId: "2025-01" });
 * const token = await signer.sign({ sub: userId, sid: sessionId, typ: "access" }, { now: clock.now(), ttlSeconds: 900 });
 */
export function createAccessTokenSigner(options: AccessTokenSignerOptions): AccessTokenSigner {
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
    async sign(claims, { now, ttlSeconds }) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)
        throw new RangeError("ttlSeconds must be a positive integer");
      if (claims.typ !== "access") throw new TypeError('typ must be "access"');
      if (claims.sub === "" || claims.sid === "") throw new TypeError("sub and sid must not be empty");
      return v4.Sign(
        await loadKey(),
        { sub: claims.sub, sid: claims.sid, typ: claims.typ, iss: ISSUER, aud: AUDIENCE },
        { now, expiresIn: ttlSeconds, footer },
      );
    },
  };
}

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

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function claimDate(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * Creates a verifier that accepts tokens signed by any of `keys`, chosen by the footer's `kid`.
 *
 * @example
 * const verifier = createAccessTokenVerifier({ keys: [{ keyId: "2025-01", publicKeySpkiDer }] });
 * const { sub, sid } = await verifier.verify(bearer, clock.now());
 */
export function createAccessTokenVerifier(options: AccessTokenVerifierOptions): AccessTokenVerifier {
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

  async function verify(token: string, now: Date): Promise<VerifiedAccessToken> {
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
        requiredClaims: ["sub", "sid", "typ", "iat", "exp"],
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

    const exp = claimDate(claims.exp);
    const iat = claimDate(claims.iat);
    const { sub, sid, typ } = claims;
    if (exp === undefined || iat === undefined)
      throw new InvalidAccessTokenError("claims", "token has no valid iat/exp");
    // The library still accepts a token at exactly exp, and stretches exp by the clock tolerance.
    if (now.getTime() >= exp.getTime()) throw new InvalidAccessTokenError("expired", "token has expired");
    if (typ !== "access") throw new InvalidAccessTokenError("claims", "token is not an access token");
    if (typeof sub !== "string" || sub === "" || typeof sid !== "string" || sid === "") {
      throw new InvalidAccessTokenError("claims", "token has no subject or session");
    }
    return { sub, sid, typ, iat, exp };
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

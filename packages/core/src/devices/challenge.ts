/**
 * The `Platform` request signature of CLI devices (and, in the same format, agent daemons):
 *
 *     Authorization: Platform <id>:<unix seconds>:<nonce>:<procedure>:<signature>
 *
 * `nonce` is 24 lowercase hex digits, `procedure` the request path with its leading slash, and
 * `signature` base64url (no padding) of a DER ECDSA P-256 signature over SHA-256 of the first
 * four fields joined by colons. A challenge is good once, within `challengeWindowSeconds` of the
 * server's clock, for the procedure it names.
 *
 * @module
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import { accountConfig } from "../auth/account-config.js";
import type { UserCaller } from "../context.js";
import { UnauthenticatedError } from "../errors.js";
import { decodeBase64Lenient } from "../lib/base64.js";
import { utf8 } from "../lib/bytes.js";
import type { Services } from "../operations/services.js";

/** A parsed challenge. */
export interface PlatformChallenge {
  readonly id: string;
  /** Unix seconds, as the signer's clock had it. */
  readonly timestamp: number;
  readonly nonce: string;
  readonly procedure: string;
  readonly signature: Uint8Array;
  /** The signed text: the first four fields joined by colons. */
  readonly signedText: string;
}

const idPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const noncePattern = /^[0-9a-f]{24}$/;
const procedurePattern = /^\/[A-Za-z0-9_.]+\/[A-Za-z0-9_]+$/;

/** Splits a challenge (the value after `Platform `), or null when it is not well-formed. */
export function parsePlatformChallenge(value: string): PlatformChallenge | null {
  if (value.length > 1024) return null;
  const fields = value.split(":");
  if (fields.length !== 5) return null;
  const [id, seconds, nonce, procedure, signature] = fields as [string, string, string, string, string];
  if (!idPattern.test(id) || !/^\d{1,12}$/.test(seconds) || !noncePattern.test(nonce)) return null;
  if (!procedurePattern.test(procedure) || /[=+/]/.test(signature)) return null;
  const bytes = decodeBase64Lenient(signature);
  if (bytes === undefined || bytes.length === 0) return null;
  return {
    id: id.toLowerCase(),
    timestamp: Number(seconds),
    nonce,
    procedure,
    signature: bytes,
    signedText: `${id}:${seconds}:${nonce}:${procedure}`,
  };
}

/** Reads a PEM SPKI public key and returns it if it is ECDSA P-256, else null. */
export function readP256PublicKey(pem: string): KeyObject | null {
  try {
    const key = createPublicKey({ key: pem, format: "pem" });
    const ok = key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1";
    return ok ? key : null;
  } catch {
    return null;
  }
}

/** True when `challenge` carries a valid DER ECDSA P-256/SHA-256 signature by `publicKeyPem`. */
export function challengeSignatureValid(challenge: PlatformChallenge, publicKeyPem: string): boolean {
  const key = readP256PublicKey(publicKeyPem);
  if (key === null) return false;
  try {
    return verify("sha256", utf8(challenge.signedText), { key, dsaEncoding: "der" }, challenge.signature);
  } catch {
    return false;
  }
}

/** What the transport hands over: the header value after `Platform ` and the path that arrived. */
export interface DeviceChallengeInput {
  readonly challenge: string;
  /** The request's procedure path, e.g. `/platform.v1.UserService/Whoami`. */
  readonly procedure: string;
}

/**
 * Resolves a signed `Platform` challenge of a CLI device to the user it signs in as. Every
 * failure (malformed, other procedure, stale, unknown device, bad signature, signed-out device,
 * replayed nonce) is the same `unauthenticated`.
 */
export async function authenticateDevice(
  services: Services,
  input: DeviceChallengeInput,
): Promise<UserCaller> {
  const invalid = () =>
    new UnauthenticatedError("the device signature is invalid, stale or replayed; sign in again", {
      reason: "INVALID_DEVICE_SIGNATURE",
    });
  const now = services.clock.now();
  const config = accountConfig(services);
  const challenge = parsePlatformChallenge(input.challenge);
  if (challenge === null || challenge.procedure !== input.procedure) throw invalid();
  const windowMs = config.challengeWindowSeconds * 1000;
  const signedAtMs = challenge.timestamp * 1000;
  if (Math.abs(now.getTime() - signedAtMs) > windowMs) throw invalid();
  const device = await services.storage.userDevices.findById(challenge.id);
  if (!device || device.expiresAt <= now) throw invalid();
  if (!challengeSignatureValid(challenge, device.publicKey)) throw invalid();
  const session = await services.storage.authSessions.findById(device.sessionId);
  if (!session || session.revokedAt !== null || session.userId !== device.userId) throw invalid();
  // Claimed last, so nobody can burn a device's nonces without its key. Remembered for as long as
  // the timestamp stays inside the window; after that the window check refuses it anyway.
  const expiresAt = new Date(signedAtMs + windowMs + 1000);
  if (!(await services.storage.requestNonces.claim(`device:${device.id}`, challenge.nonce, expiresAt, now))) {
    throw invalid();
  }
  const resolutionMs = services.config.lastUsedResolutionSeconds * 1000;
  if (device.lastUsedAt === null || now.getTime() - device.lastUsedAt.getTime() >= resolutionMs) {
    await services.storage.userDevices.touchLastUsed(device.id, now);
  }
  return { kind: "user", userId: device.userId, sessionId: device.sessionId };
}

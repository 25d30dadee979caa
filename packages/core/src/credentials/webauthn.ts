/**
 * The WebAuthn relying party (@simplewebauthn/server) as the passkey operations use it: who we
 * are (RP ID and origin from `publicBaseUrl`), and reading a client's JSON response safely.
 *
 * @module
 */
import type * as WebAuthn from "@simplewebauthn/server";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import * as z from "zod";
import type { AccountConfig } from "../auth/account-config.js";
import { decodeBase64Lenient } from "../lib/base64.js";
import { fromUtf8 } from "../lib/bytes.js";

/** @simplewebauthn/server, loaded at the first passkey call (it is large and most calls never need it). */
let webauthnModule: Promise<typeof WebAuthn> | undefined;
export const webauthn = () => (webauthnModule ??= import("@simplewebauthn/server"));

/** The library wants plain ArrayBuffer-backed arrays. */
export const owned = (bytes: Uint8Array) => new Uint8Array(bytes);

/** The relying party a platform presents to authenticators. */
export interface RelyingParty {
  /** The host of `publicBaseUrl` (a passkey works on that host and its subdomains' parent only). */
  readonly id: string;
  readonly name: string;
  /** The origin browsers report in clientDataJSON. */
  readonly origin: string;
}

export function relyingParty(config: AccountConfig): RelyingParty {
  const url = new URL(config.publicBaseUrl);
  return { id: url.hostname, name: config.webauthnRpName, origin: url.origin };
}

/** The largest credential JSON accepted (attestations with certificate chains stay well under). */
export const maxCredentialJsonLength = 65_536;

const base64url = z.string().regex(/^[A-Za-z0-9_-]+$/);

// Only the fields we read are checked; the library checks the rest (loosely typed on purpose).
const registrationShape = z.looseObject({
  id: base64url,
  rawId: base64url,
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  response: z.looseObject({
    clientDataJSON: base64url,
    attestationObject: base64url,
    transports: z.array(z.string().max(32)).max(16).optional(),
  }),
});

const authenticationShape = z.looseObject({
  id: base64url,
  rawId: base64url,
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  response: z.looseObject({
    clientDataJSON: base64url,
    authenticatorData: base64url,
    signature: base64url,
    userHandle: base64url.optional(),
  }),
});

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The challenge a response answers (from its clientDataJSON), or null when unreadable. */
function challengeOf(clientDataJSON: string): string | null {
  const bytes = decodeBase64Lenient(clientDataJSON);
  if (bytes === undefined) return null;
  let data: unknown;
  try {
    data = JSON.parse(fromUtf8(bytes));
  } catch {
    return null;
  }
  const challenge = (data as { challenge?: unknown } | null)?.challenge;
  return typeof challenge === "string" && /^[A-Za-z0-9_-]{16,128}$/.test(challenge) ? challenge : null;
}

/** A registration response and the challenge it answers, or null when it is not one. */
export function readRegistration(
  json: string,
): { response: RegistrationResponseJSON; challenge: string } | null {
  const parsed = registrationShape.safeParse(parseJson(json));
  if (!parsed.success) return null;
  const challenge = challengeOf(parsed.data.response.clientDataJSON);
  if (challenge === null) return null;
  return { response: parsed.data as unknown as RegistrationResponseJSON, challenge };
}

/** An authentication response and the challenge it answers, or null when it is not one. */
export function readAuthentication(
  json: string,
): { response: AuthenticationResponseJSON; challenge: string } | null {
  const parsed = authenticationShape.safeParse(parseJson(json));
  if (!parsed.success) return null;
  const challenge = challengeOf(parsed.data.response.clientDataJSON);
  if (challenge === null) return null;
  return { response: parsed.data as unknown as AuthenticationResponseJSON, challenge };
}

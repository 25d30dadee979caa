/**
 * Webhook signing secrets in the Standard Webhooks form: `whsec_` and the base64 of 32 random
 * bytes. The bytes (not the text) key the HMAC. Made by the server, shown once, sealed at rest.
 *
 * @module
 */
import { encodeBase64 } from "../lib/base64.js";

export const webhookSecretPrefix = "whsec_";

/** Bytes of a new secret (Standard Webhooks asks for 24 to 64). */
export const webhookSecretBytes = 32;

/** The key store context a secret is sealed under. */
export function webhookSecretContext(endpointId: string, version: number): string {
  return `webhook-secret:${endpointId}:${version}`;
}

/** The text an admin is shown once: `whsec_<base64>`. */
export function webhookSecretText(bytes: Uint8Array): string {
  return `${webhookSecretPrefix}${encodeBase64(bytes)}`;
}

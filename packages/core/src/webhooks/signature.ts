/**
 * Standard Webhooks signatures: `v1,<base64 of HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")>`,
 * one per secret that signs (two during a rotation's overlap), separated by spaces.
 *
 * @module
 */
import { createHmac } from "node:crypto";

/** The signed content: what `openssl dgst -sha256 -mac HMAC` is given to check a delivery. */
export function signedContent(id: string, timestamp: number, body: string): string {
  return `${id}.${timestamp}.${body}`;
}

export function webhookSignature(key: Uint8Array, id: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", key)
    .update(signedContent(id, timestamp, body), "utf8")
    .digest("base64");
  return `v1,${mac}`;
}

/** The `webhook-signature` header: a signature per key, newest key first. */
export function webhookSignatureHeader(
  keys: readonly Uint8Array[],
  id: string,
  timestamp: number,
  body: string,
): string {
  return keys.map((key) => webhookSignature(key, id, timestamp, body)).join(" ");
}

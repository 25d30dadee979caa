/**
 * PEM armour (RFC 7468) around DER or other binary bodies.
 *
 * @module
 */
import { decodeBase64Lenient, encodeBase64 } from "./base64.js";

/**
 * Wraps `body` in `-----BEGIN <label>-----` lines. PEM uses 64 columns; OpenSSH's own private-key
 * armour uses 70, which is why the width is a parameter.
 */
export function toPem(label: string, body: Uint8Array, width = 64): string {
  const b64 = encodeBase64(body);
  let lines = "";
  for (let i = 0; i < b64.length; i += width) lines += `${b64.slice(i, i + width)}\n`;
  return `-----BEGIN ${label}-----\n${lines}-----END ${label}-----\n`;
}

/** The body of the first PEM block with this label, or `undefined` if there is none or it is not base64. */
export function fromPem(label: string, text: string): Uint8Array | undefined {
  const begin = `-----BEGIN ${label}-----`;
  const end = `-----END ${label}-----`;
  const start = text.indexOf(begin);
  if (start === -1) return undefined;
  const stop = text.indexOf(end, start + begin.length);
  if (stop === -1) return undefined;
  const b64 = text.slice(start + begin.length, stop).replace(/\s+/g, "");
  return decodeBase64Lenient(b64);
}

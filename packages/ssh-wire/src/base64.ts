/**
 * Strict base64 and base64url on Uint8Array.
 *
 * Written out instead of `Buffer.from(text, "base64")` because Buffer silently skips characters
 * it does not know, and secrets parsed from configuration must fail loudly instead.
 *
 * @module
 */

const STANDARD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function encodeWith(alphabet: string, bytes: Uint8Array, pad: boolean): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + alphabet[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + (pad ? "==" : "");
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + (pad ? "=" : "");
  }
  return out;
}

/** Standard base64 with `=` padding (RFC 4648 section 4), as OpenSSH and PEM use it. */
export function encodeBase64(bytes: Uint8Array): string {
  return encodeWith(STANDARD, bytes, true);
}

/** Standard base64 without padding, as `ssh-keygen -l` prints fingerprints. */
export function encodeBase64NoPad(bytes: Uint8Array): string {
  return encodeWith(STANDARD, bytes, false);
}

/** base64url without padding (RFC 4648 section 5). */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encodeWith(URL_SAFE, bytes, false);
}

const DECODE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) {
  DECODE[STANDARD.charCodeAt(i)] = i;
  DECODE[URL_SAFE.charCodeAt(i)] = i;
}

/**
 * Decodes standard base64 or base64url, padded or not. Returns `undefined` for anything else:
 * stray characters, whitespace, a mix of both alphabets, wrong padding, or non-zero trailing bits.
 */
export function decodeBase64Lenient(text: string): Uint8Array | undefined {
  let body = text;
  const padAt = body.indexOf("=");
  if (padAt !== -1) {
    const padding = body.slice(padAt);
    if (padding !== "=" && padding !== "==") return undefined;
    if (body.length % 4 !== 0) return undefined;
    body = body.slice(0, padAt);
  }
  if (body.length % 4 === 1) return undefined;
  const hasStandard = /[+/]/.test(body);
  const hasUrl = /[-_]/.test(body);
  if (hasStandard && hasUrl) return undefined;

  const out = new Uint8Array(Math.floor((body.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let o = 0;
  for (let i = 0; i < body.length; i++) {
    const code = body.charCodeAt(i);
    const digit = code < 128 ? DECODE[code]! : -1;
    if (digit < 0) return undefined;
    value = (value << 6) | digit;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 0xff;
      value &= (1 << bits) - 1;
    }
  }
  // Canonical encodings leave the unused low bits zero; anything else is a different string for the same bytes.
  if ((value & ((1 << bits) - 1)) !== 0) return undefined;
  return out;
}

/** Decodes base64url without padding, strictly. */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (/[+/=]/.test(text)) return undefined;
  return decodeBase64Lenient(text);
}

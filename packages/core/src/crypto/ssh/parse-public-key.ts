/**
 * Parsing of OpenSSH public keys in authorized_keys form, strict enough to hand the result to the
 * certificate encoder: every length, curve, point and exponent is checked here once.
 *
 * @module
 */

import { type SshKeyAlgorithm, sshFingerprintSha256 } from "@wap/ssh-wire";
import { decodeBase64Lenient } from "../../lib/base64.js";
import { fromUtf8, toHex } from "../../lib/bytes.js";
import { SshReader } from "../../lib/ssh-wire.js";

/**
 * Security-key (FIDO) keys: an Ed25519 or P-256 key held by a hardware token, with the
 * application it was made for (`ssh:` and more). Signed for user certificates only.
 */
export type SkKeyAlgorithm = "sk-ssh-ed25519@openssh.com" | "sk-ecdsa-sha2-nistp256@openssh.com";

/** A validated SSH public key. */
export interface ParsedSshPublicKey {
  readonly algorithm: SshKeyAlgorithm | SkKeyAlgorithm;
  readonly keyType: "ed25519" | "ecdsa" | "rsa";
  /** 256 for Ed25519, the curve size for ECDSA, the modulus length for RSA. */
  readonly bits: number;
  /** The SSH wire-format public key (the decoded base64 field). */
  readonly blob: Uint8Array;
  /** `SHA256:<base64>`, as `ssh-keygen -l` prints it. */
  readonly fingerprint: string;
  /** The text after the key, trimmed; empty when there is none. */
  readonly comment: string;
}

/**
 * An SSH public key that cannot be used. `reason` is meant for the developer who sent it and is
 * safe to return in an `invalid_argument` message: it never echoes key material.
 */
export class SshKeyParseError extends Error {
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/** RSA moduli below this are refused (NIST SP 800-131A). The maximum is OpenSSH's own limit. */
export const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 16384;
// The longest valid line (RSA-16384 with a long comment) stays far below this.
const MAX_LINE_LENGTH = 16384;
const MAX_COMMENT_LENGTH = 1024;

const ecdsaCurves = {
  "ecdsa-sha2-nistp256": { name: "nistp256", size: 32, bits: 256 },
  "ecdsa-sha2-nistp384": { name: "nistp384", size: 48, bits: 384 },
  "ecdsa-sha2-nistp521": { name: "nistp521", size: 66, bits: 521 },
} as const;
type EcdsaAlgorithm = keyof typeof ecdsaCurves;

// Short Weierstrass parameters (y^2 = x^3 - 3x + b mod p) from SEC 2 / FIPS 186-4.
const curveParams: Readonly<Record<EcdsaAlgorithm, { p: bigint; b: bigint }>> = {
  "ecdsa-sha2-nistp256": {
    p: 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  },
  "ecdsa-sha2-nistp384": {
    p: 2n ** 384n - 2n ** 128n - 2n ** 96n + 2n ** 32n - 1n,
    b: 0xb3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aefn,
  },
  "ecdsa-sha2-nistp521": {
    p: 2n ** 521n - 1n,
    b: 0x0051953eb9618e1c9a1f929a21a0b68540eea2da725b99b315f3b8b489918ef109e156193951ec7e937b1652c0bd3bb1bf073573df883d2c34f1ef451fd46b503f00n,
  },
};

const supported: ReadonlySet<string> = new Set<SshKeyAlgorithm | SkKeyAlgorithm>([
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
  "ssh-ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "ssh-rsa",
]);

/** Why a key type we recognise is still refused. */
function refusedType(type: string): string | undefined {
  if (type.endsWith("-cert-v01@openssh.com")) {
    return "certificates are not accepted here: send the plain public key (the .pub file, not -cert.pub)";
  }
  if (type.startsWith("sk-")) {
    return `security-key (FIDO) keys of type ${clip(type)} are not supported: use sk-ssh-ed25519@openssh.com or sk-ecdsa-sha2-nistp256@openssh.com`;
  }
  if (type === "ssh-dss") return "DSA (ssh-dss) keys are not supported: use an ed25519, ecdsa or rsa key";
  if (type.startsWith("ecdsa-sha2-")) return `unsupported ECDSA curve in key type ${clip(type)}`;
  return undefined;
}

function looksLikeKeyType(token: string): boolean {
  return supported.has(token) || refusedType(token) !== undefined || token === "ssh-ed448";
}

/** Input echoed into a reason: printable ASCII only, and short, so a hostile line cannot shape the message. */
function clip(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, "?");
  return printable.length > 40 ? `${printable.slice(0, 40)}...` : printable;
}

function fail(reason: string): never {
  throw new SshKeyParseError(reason);
}

/** Unsigned big-endian bytes of an SSH mpint that must be positive and minimally encoded. */
function positiveMpint(bytes: Uint8Array, what: string): Uint8Array {
  if (bytes.length === 0) fail(`RSA ${what} is zero`);
  if ((bytes[0]! & 0x80) !== 0) fail(`RSA ${what} is negative`);
  if (bytes[0] === 0) {
    if (bytes.length === 1 || (bytes[1]! & 0x80) === 0) fail(`RSA ${what} has a non-minimal mpint encoding`);
    return bytes.subarray(1);
  }
  return bytes;
}

function bitLength(unsigned: Uint8Array): number {
  const top = unsigned[0]!;
  return (unsigned.length - 1) * 8 + (32 - Math.clz32(top));
}

function toBigInt(unsigned: Uint8Array): bigint {
  return unsigned.length === 0 ? 0n : BigInt(`0x${toHex(unsigned)}`);
}

interface BlobFields {
  readonly keyType: ParsedSshPublicKey["keyType"];
  readonly bits: number;
}

function parseEd25519(r: SshReader): BlobFields {
  const key = r.string();
  // As in OpenSSH, only the length is checked: node would import any 32 bytes, and bytes that are
  // not a curve point make a key that can never produce a valid signature.
  if (key.length !== 32) fail(`ssh-ed25519 key must be 32 bytes (got ${key.length})`);
  return { keyType: "ed25519", bits: 256 };
}

function parseEcdsa(r: SshReader, algorithm: EcdsaAlgorithm): BlobFields {
  const curve = ecdsaCurves[algorithm];
  const name = r.string();
  if (fromUtf8(name) !== curve.name)
    fail(`${algorithm} key names curve "${clip(fromUtf8(name))}", not ${curve.name}`);
  const point = r.string();
  if (point.length !== 1 + 2 * curve.size || point[0] !== 0x04) {
    fail(`${algorithm} key must be an uncompressed ${curve.name} point of ${1 + 2 * curve.size} bytes`);
  }
  const x = toBigInt(point.subarray(1, 1 + curve.size));
  const y = toBigInt(point.subarray(1 + curve.size));
  const { p, b } = curveParams[algorithm];
  if (x >= p || y >= p) fail(`${algorithm} point coordinates are out of range`);
  // The NIST curves have prime order, so any point on the curve is a valid public key (and the
  // point at infinity has no uncompressed encoding): this is all OpenSSL's JWK import establishes,
  // at 1/100 of its cost (~70 µs, more than signing the certificate). Tests compare the two.
  if ((y * y - (x * x * x - 3n * x + b)) % p !== 0n) fail(`${algorithm} point is not on the curve`);
  return { keyType: "ecdsa", bits: curve.bits };
}

function parseRsa(r: SshReader): BlobFields {
  const e = positiveMpint(r.string(), "exponent");
  const n = positiveMpint(r.string(), "modulus");
  // Go's x/crypto/ssh (the daemon) refuses exponents over 24 bits, so we refuse them before signing.
  if (bitLength(e) > 24) fail("RSA exponent is too large (at most 24 bits)");
  const exponent = Number(toBigInt(e));
  if (exponent < 3 || exponent % 2 === 0) fail("RSA exponent must be odd and at least 3");
  const bits = bitLength(n);
  if (bits < MIN_RSA_BITS) fail(`RSA keys must have at least ${MIN_RSA_BITS} bits (got ${bits})`);
  if (bits > MAX_RSA_BITS) fail(`RSA keys must have at most ${MAX_RSA_BITS} bits (got ${bits})`);
  if ((n[n.length - 1]! & 1) === 0) fail("RSA modulus is even");
  return { keyType: "rsa", bits };
}

/** The longest application a security key may name (OpenSSH's own limit is far above real ones). */
const MAX_APPLICATION_LENGTH = 255;

/** A security key's application: `ssh:` and printable ASCII, as `ssh-keygen -O application=` requires. */
function parseApplication(r: SshReader, algorithm: string): void {
  const application = fromUtf8(r.string());
  if (!/^ssh:[\x21-\x7e]*$/.test(application) || application.length > MAX_APPLICATION_LENGTH) {
    fail(
      `${algorithm} key's application must be "ssh:" and at most ${MAX_APPLICATION_LENGTH} printable characters`,
    );
  }
}

/** Validates a wire-format blob whose outer line named `algorithm`. */
function parseBlob(blob: Uint8Array, algorithm: SshKeyAlgorithm | SkKeyAlgorithm): BlobFields {
  const r = new SshReader(blob);
  const inner = r.string();
  const innerName = fromUtf8(inner);
  if (innerName !== algorithm)
    fail(`the key data is of type "${clip(innerName)}" but the line says ${algorithm}`);
  let fields: BlobFields;
  switch (algorithm) {
    case "ssh-ed25519":
      fields = parseEd25519(r);
      break;
    case "ssh-rsa":
      fields = parseRsa(r);
      break;
    case "sk-ssh-ed25519@openssh.com":
      fields = parseEd25519(r);
      parseApplication(r, algorithm);
      break;
    case "sk-ecdsa-sha2-nistp256@openssh.com":
      fields = parseEcdsa(r, "ecdsa-sha2-nistp256");
      parseApplication(r, algorithm);
      break;
    default:
      fields = parseEcdsa(r, algorithm);
  }
  if (r.remaining !== 0) fail(`${r.remaining} unexpected bytes after the ${algorithm} key`);
  return fields;
}

function parseLine(line: string): ParsedSshPublicKey {
  if (line.length > MAX_LINE_LENGTH) fail(`public key line is longer than ${MAX_LINE_LENGTH} characters`);
  const text = line.trim();
  if (text === "") fail("public key is empty");
  if (/[\r\n]/.test(text)) fail("expected exactly one public key line");

  const tokens = text.split(/[ \t]+/);
  const type = tokens[0]!;
  if (!supported.has(type)) {
    const refused = refusedType(type);
    if (refused !== undefined) fail(refused);
    if (type.startsWith("@")) fail(`known_hosts markers such as ${clip(type)} are not accepted`);
    // Options (`command="..."`, `no-pty`, `restrict`) come before the key type in authorized_keys.
    if (tokens.slice(1).some(looksLikeKeyType)) {
      fail(
        "authorized_keys options before the key type are not accepted: send only `<type> <base64> [comment]`",
      );
    }
    fail(`unsupported or unrecognised key type "${clip(type)}"`);
  }
  const algorithm = type as SshKeyAlgorithm | SkKeyAlgorithm;

  const encoded = tokens[1];
  if (encoded === undefined) fail(`missing base64 key data after ${algorithm}`);
  // OpenSSH writes padded standard base64; the shared decoder would also take base64url.
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    fail("key data is not valid base64");
  }
  const blob = decodeBase64Lenient(encoded);
  if (blob === undefined) fail("key data is not valid base64");

  const { keyType, bits } = parseBlob(blob, algorithm);

  const commentStart = text.indexOf(encoded, type.length) + encoded.length;
  const comment = text.slice(commentStart).trim();
  if (comment.length > MAX_COMMENT_LENGTH) fail(`comment is longer than ${MAX_COMMENT_LENGTH} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is being refused.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(comment)) fail("comment contains control characters");

  return { algorithm, keyType, bits, blob, fingerprint: sshFingerprintSha256(blob), comment };
}

/**
 * Parses one public key in authorized_keys / `.pub` form, `<type> <base64> [comment]`, with
 * surrounding whitespace (a trailing newline) allowed. Supported: ssh-ed25519,
 * ecdsa-sha2-nistp256/384/521, ssh-rsa with at least 2048 bits, and the security-key (FIDO)
 * sk-ssh-ed25519 and sk-ecdsa-sha2-nistp256 with an `ssh:` application. Refused with a reason:
 * certificates, other sk- keys, DSA, authorized_keys options, and any malformed key data.
 *
 * @throws {SshKeyParseError} for every input that is not such a key, and never any other error.
 *
 * @example
 * const key = parseSshPublicKey("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA... alice@laptop\n");
 * key.keyType; // "ed25519"
 * key.fingerprint; // "SHA256:..."
 */
export function parseSshPublicKey(line: string): ParsedSshPublicKey {
  try {
    if (typeof line !== "string") fail("public key must be a string");
    return parseLine(line);
  } catch (err) {
    if (err instanceof SshKeyParseError) throw err;
    // The wire reader throws RangeError on truncation, and strict UTF-8 decoding throws TypeError.
    if (err instanceof RangeError) throw new SshKeyParseError("key data is truncated", { cause: err });
    throw new SshKeyParseError("key data is malformed", { cause: err });
  }
}

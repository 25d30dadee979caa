/**
 * The OpenSSH certificate encoder (PROTOCOL.certkeys) on node:crypto. Not sshpk: it cannot write
 * extensions or critical options and signs with SHA-1 for RSA CAs.
 *
 * @module
 */
import { randomFillSync } from "node:crypto";
import { type SshKeyAlgorithm, sshPublicKeyBlob } from "@wap/ssh-wire";
import { encodeBase64 } from "../../lib/base64.js";
import { fromUtf8 } from "../../lib/bytes.js";
import { SshReader } from "../../lib/ssh-wire.js";
import { type CaSigningKey, softwareSigningKey } from "../ca-signing-key.js";
import type { CaKeySpec } from "../key-types.js";
import type { ParsedSshPublicKey } from "./parse-public-key.js";

/** `user` certificates authenticate people to sshd; `host` certificates authenticate sshd to clients. */
export type SshCertificateType = "user" | "host";

/** What goes into one certificate; the CA comes from the signer. */
export interface SshCertificateParams {
  readonly publicKey: ParsedSshPublicKey;
  readonly type: SshCertificateType;
  /** A uint64. */
  readonly serial: bigint;
  readonly keyId: string;
  /** At least one: OpenSSH reads an empty list as "any principal", which must never be issued by accident. */
  readonly principals: readonly string[];
  /** Encoded as whole seconds, rounded down. */
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** Names such as `force-command`, `source-address`. Written in name order. */
  readonly criticalOptions: Readonly<Record<string, string>>;
  /** Names such as `permit-pty`; flag extensions have the value `""`. Written in name order. */
  readonly extensions: Readonly<Record<string, string>>;
  /** 16 to 64 random bytes; 32 fresh ones when omitted. */
  readonly nonce?: Uint8Array;
  /** The comment after the certificate on its line; the public key's comment when omitted. */
  readonly comment?: string;
}

/** A CA key parsed once, signing any number of certificates. */
export interface SshCertificateSigner {
  readonly spec: CaKeySpec;
  /** The CA's public key blob, which certificates carry as their signature key. */
  readonly publicKeyBlob: Uint8Array;
  /** The CA's public key as an authorized_keys line without comment (for TrustedUserCAKeys and @cert-authority). */
  readonly publicKeyLine: string;
  /** `ssh-ed25519`, `ecdsa-sha2-nistp*` or `rsa-sha2-512`. */
  readonly signatureAlgorithm: string;
  /** Returns the `<type>-cert-v01@openssh.com <base64>[ <comment>]` line. */
  sign(params: SshCertificateParams): string;
  /**
   * The same line, its signature made off the event loop where the key can (a software key, on
   * libuv's thread pool), so that one process signs on more than one core.
   */
  signAsync(params: SshCertificateParams): Promise<string>;
}

/** The extensions `ssh-keygen -s` grants user certificates by default; stock sshd needs `permit-pty` for a terminal. */
export const standardUserExtensions: Readonly<Record<string, string>> = Object.freeze({
  "permit-X11-forwarding": "",
  "permit-agent-forwarding": "",
  "permit-port-forwarding": "",
  "permit-pty": "",
  "permit-user-rc": "",
});

interface SigningMethod {
  readonly signatureAlgorithm: string;
  sign(data: Uint8Array): Uint8Array;
  signAsync(data: Uint8Array): Promise<Uint8Array>;
}

/** Splits an IEEE P1363 ECDSA signature (r || s) into the SSH form: mpint r, mpint s (RFC 5656 section 3.1.2). */
function ecdsaSignatureBlob(p1363: Uint8Array): Uint8Array {
  const half = p1363.length / 2;
  const r = mpintParts(p1363.subarray(0, half));
  const s = mpintParts(p1363.subarray(half));
  const out = new Uint8Array(8 + r.length + s.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, r.length);
  out.set(r.magnitude, 4 + r.length - r.magnitude.length);
  view.setUint32(4 + r.length, s.length);
  out.set(s.magnitude, 8 + r.length + s.length - s.magnitude.length);
  return out;
}

/** An unsigned integer as an mpint body: leading zeros dropped, one zero byte kept when the top bit is set. */
function mpintParts(unsigned: Uint8Array): { magnitude: Uint8Array; length: number } {
  let i = 0;
  while (i < unsigned.length && unsigned[i] === 0) i++;
  const magnitude = unsigned.subarray(i);
  const pad = magnitude.length > 0 && (magnitude[0]! & 0x80) !== 0 ? 1 : 0;
  return { magnitude, length: magnitude.length + pad };
}

function signingMethod(key: CaSigningKey): SigningMethod {
  const spec = key.spec;
  // A key without an off-loop signature (a PKCS#11 token's) signs in place.
  const raw = (data: Uint8Array) =>
    key.signAsync ? key.signAsync(data, "sha512") : Promise.resolve(key.sign(data, "sha512"));
  switch (spec.type) {
    case "ed25519":
      return {
        signatureAlgorithm: "ssh-ed25519",
        sign: (data) => key.sign(data, "sha512"),
        signAsync: raw,
      };
    case "ecdsa":
      return {
        signatureAlgorithm: specAlgorithm[spec.curve]!,
        sign: (data) => ecdsaSignatureBlob(key.sign(data, "sha512")),
        signAsync: async (data) => ecdsaSignatureBlob(await raw(data)),
      };
    case "rsa":
      // OpenSSH 8.2+ refuses ssh-rsa (SHA-1) signatures on certificates (CASignatureAlgorithms).
      return {
        signatureAlgorithm: "rsa-sha2-512",
        sign: (data) => key.sign(data, "sha512"),
        signAsync: raw,
      };
  }
}

const specAlgorithm: Readonly<Record<string, SshKeyAlgorithm>> = {
  ed25519: "ssh-ed25519",
  "P-256": "ecdsa-sha2-nistp256",
  "P-384": "ecdsa-sha2-nistp384",
  "P-521": "ecdsa-sha2-nistp521",
  rsa: "ssh-rsa",
};

function assertText(value: string, what: string): void {
  // NUL would truncate the value in OpenSSH's C strings; a lone surrogate has no UTF-8 encoding.
  if (/[\0\p{Cs}]/u.test(value)) throw new TypeError(`${what} must not contain NUL or lone surrogates`);
}

const textEncoder = new TextEncoder();

/**
 * The SSH wire encoding written into one growing buffer that a signer reuses for every
 * certificate. SshWriter allocates per field, which cost more than the Ed25519 signature itself
 * (about 1 µs per field); certificates are the hot path of the service.
 */
class CertificateEncoder {
  #buf = new Uint8Array(2048);
  #view = new DataView(this.#buf.buffer);
  #at = 0;

  reset(): void {
    this.#at = 0;
  }

  #ensure(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#at + n));
    grown.set(this.#buf.subarray(0, this.#at));
    this.#buf = grown;
    this.#view = new DataView(grown.buffer);
  }

  uint32(value: number): void {
    this.#ensure(4);
    this.#view.setUint32(this.#at, value);
    this.#at += 4;
  }

  uint64(value: bigint): void {
    if (value < 0n || value > 0xffffffffffffffffn) throw new RangeError(`uint64 out of range: ${value}`);
    this.#ensure(8);
    this.#view.setBigUint64(this.#at, value);
    this.#at += 8;
  }

  raw(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    this.#buf.set(bytes, this.#at);
    this.#at += bytes.length;
  }

  /** A length-prefixed byte string. */
  bytes(bytes: Uint8Array): void {
    this.uint32(bytes.length);
    this.raw(bytes);
  }

  /** A length-prefixed UTF-8 string, encoded in place. */
  text(value: string): void {
    this.#ensure(4 + value.length * 3);
    const { written } = textEncoder.encodeInto(value, this.#buf.subarray(this.#at + 4));
    this.#view.setUint32(this.#at, written);
    this.#at += 4 + written;
  }

  /** Starts a string whose contents are the fields written until `close(mark)`. */
  open(): number {
    this.uint32(0);
    return this.#at;
  }

  close(mark: number): void {
    this.#view.setUint32(mark - 4, this.#at - mark);
  }

  /** A view of what has been written; valid until the next write. */
  view(): Uint8Array {
    return this.#buf.subarray(0, this.#at);
  }
}

/** UTF-8 byte order, which is code point order; plain `sort()` compares UTF-16 units. */
function compareNames(a: string, b: string): number {
  const ca = [...a];
  const cb = [...b];
  const n = Math.min(ca.length, cb.length);
  for (let i = 0; i < n; i++) {
    const d = ca[i]!.codePointAt(0)! - cb[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return ca.length - cb.length;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is exactly what is tested for.
const asciiOnly = /^[\u0000-\u007f]*$/;

/**
 * Writes a name/value list: each entry is `string name, string data`, sorted by name as
 * PROTOCOL.certkeys requires. A non-empty value is itself string-wrapped inside data; an empty
 * value is zero-length data, which is how flag extensions such as `permit-pty` are written.
 */
function writeOptionList(
  out: CertificateEncoder,
  entries: Readonly<Record<string, string>>,
  what: string,
): void {
  const names = Object.keys(entries);
  if (names.every((name) => asciiOnly.test(name))) names.sort();
  else names.sort(compareNames);
  const list = out.open();
  for (const name of names) {
    const value = entries[name]!;
    if (name === "") throw new TypeError(`${what} names must not be empty`);
    if (typeof value !== "string") throw new TypeError(`${what} ${name} must have a string value`);
    assertText(name, `${what} name`);
    assertText(value, `${what} value`);
    out.text(name);
    if (value === "") {
      out.uint32(0);
    } else {
      const data = out.open();
      out.text(value);
      out.close(data);
    }
  }
  out.close(list);
}

function seconds(date: Date, what: string): bigint {
  const ms = date.getTime();
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`${what} must be a valid date after 1970`);
  return BigInt(Math.floor(ms / 1000));
}

/** The key fields of the public key blob, after its type name, which the certificate repeats. */
function keyFields(publicKey: ParsedSshPublicKey): Uint8Array {
  const r = new SshReader(publicKey.blob);
  const name = r.string();
  if (fromUtf8(name) !== publicKey.algorithm) {
    throw new TypeError("publicKey.blob does not match its algorithm");
  }
  return publicKey.blob.subarray(4 + name.length);
}

// Nonces come from one pooled CSPRNG buffer: a randomBytes call per certificate costs ~2 µs.
const NONCE_SIZE = 32;
const noncePool = new Uint8Array(NONCE_SIZE * 128);
let noncePoolOffset = noncePool.length;

function freshNonce(): Uint8Array {
  if (noncePoolOffset === noncePool.length) {
    randomFillSync(noncePool);
    noncePoolOffset = 0;
  }
  const nonce = noncePool.subarray(noncePoolOffset, noncePoolOffset + NONCE_SIZE);
  noncePoolOffset += NONCE_SIZE;
  return nonce;
}

function toBase64(bytes: Uint8Array): string {
  // Buffer's native encoder is ~20x faster than lib/base64 on certificate-sized input; same output.
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/**
 * Creates a signer that holds the parsed CA private key, so each certificate costs one signature
 * and no key import.
 *
 * @param caPrivateKeyPkcs8Der the CA's PKCS#8 PrivateKeyInfo (unsealed).
 * @throws {TypeError} when the key is not of the kind `caSpec` says.
 *
 * @example
 * const signer = createSshCertificateSigner(ca.privateKeyPkcs8Der, { type: "ed25519" });
 * const line = signer.sign({
 *   publicKey: parseSshPublicKey(request.publicKey),
 *   type: "user",
 *   serial: 42n,
 *   keyId: "req-7f3a",
 *   principals: [user.id],
 *   validAfter: new Date(now - 5 * 60_000),
 *   validBefore: new Date(now + 8 * 3600_000),
 *   criticalOptions: {},
 *   extensions: standardUserExtensions,
 * });
 */
export function createSshCertificateSigner(
  caPrivateKeyPkcs8Der: Uint8Array,
  caSpec: CaKeySpec,
): SshCertificateSigner {
  return sshCertificateSignerOf(softwareSigningKey(caPrivateKeyPkcs8Der, caSpec));
}

/** A certificate signer over any CA signing key (software or in a PKCS#11 token). */
export function sshCertificateSignerOf(caKey: CaSigningKey): SshCertificateSigner {
  const caSpec = caKey.spec;
  const method = signingMethod(caKey);
  const publicKeyBlob = sshPublicKeyBlob(caKey.publicKeySpkiDer);
  const publicKeyLine = `${specAlgorithm[caSpec.type === "ecdsa" ? caSpec.curve : caSpec.type]} ${encodeBase64(publicKeyBlob)}`;
  // Reused across calls: it is written and read within one synchronous stretch each time (the
  // off-loop signature works on a copy), so no two certificates share it at once.
  const out = new CertificateEncoder();

  return {
    spec: caSpec,
    publicKeyBlob,
    publicKeyLine,
    signatureAlgorithm: method.signatureAlgorithm,
    sign(params) {
      const { certType, comment } = writeToBeSigned(out, params);
      return finish(out, certType, comment, method.sign(out.view()));
    },
    async signAsync(params) {
      const { certType, comment } = writeToBeSigned(out, params);
      // The encoder is shared: the bytes to sign are copied out before the thread hand-off, and
      // the certificate is written again from them once the signature is back.
      const toBeSigned = out.view().slice();
      const signature = await method.signAsync(toBeSigned);
      out.reset();
      out.raw(toBeSigned);
      return finish(out, certType, comment, signature);
    },
  };

  /** Appends the signature to the signed part in `encoder` and returns the certificate line. */
  function finish(encoder: CertificateEncoder, certType: string, comment: string, signature: Uint8Array) {
    const signatureBlob = encoder.open();
    encoder.text(method.signatureAlgorithm);
    encoder.bytes(signature);
    encoder.close(signatureBlob);
    const line = `${certType} ${toBase64(encoder.view())}`;
    return comment === "" ? line : `${line} ${comment}`;
  }

  /** Checks `params` and writes the certificate up to its signature into `encoder`. */
  function writeToBeSigned(out: CertificateEncoder, params: SshCertificateParams) {
    const { publicKey, principals } = params;
    const after = seconds(params.validAfter, "validAfter");
    const before = seconds(params.validBefore, "validBefore");
    if (after >= before) throw new RangeError("validAfter must be before validBefore (in whole seconds)");
    const nonce = params.nonce ?? freshNonce();
    if (nonce.length < 16 || nonce.length > 64) throw new RangeError("nonce must be 16 to 64 bytes");
    if (principals.length === 0) throw new TypeError("a certificate needs at least one principal");
    assertText(params.keyId, "keyId");
    const typeCode = params.type === "user" ? 1 : params.type === "host" ? 2 : undefined;
    if (typeCode === undefined) throw new TypeError(`unknown certificate type ${String(params.type)}`);
    const comment = params.comment ?? publicKey.comment;
    if (/[\r\n\0]/.test(comment)) throw new TypeError("comment must not contain line breaks or NUL");
    // sk-ssh-ed25519@openssh.com becomes sk-ssh-ed25519-cert-v01@openssh.com.
    const certType = `${publicKey.algorithm.replace(/@openssh\.com$/, "")}-cert-v01@openssh.com`;

    out.reset();
    out.text(certType);
    out.bytes(nonce);
    out.raw(keyFields(publicKey));
    out.uint64(params.serial);
    out.uint32(typeCode);
    out.text(params.keyId);
    const principalList = out.open();
    for (const principal of principals) {
      if (principal === "") throw new TypeError("principals must not be empty strings");
      assertText(principal, "principal");
      out.text(principal);
    }
    out.close(principalList);
    out.uint64(after);
    out.uint64(before);
    writeOptionList(out, params.criticalOptions, "critical option");
    writeOptionList(out, params.extensions, "extension");
    out.uint32(0); // reserved
    out.bytes(publicKeyBlob);
    return { certType, comment };
  }
}

/**
 * Signs one certificate with a CA key given as PKCS#8. For more than one certificate per key, use
 * {@link createSshCertificateSigner}: this parses the key on every call.
 *
 * @example
 * const line = signSshCertificate({ caPrivateKeyPkcs8Der, caSpec, publicKey, type: "host", ... });
 */
export function signSshCertificate(
  params: SshCertificateParams & { readonly caPrivateKeyPkcs8Der: Uint8Array; readonly caSpec: CaKeySpec },
): string {
  return createSshCertificateSigner(params.caPrivateKeyPkcs8Der, params.caSpec).sign(params);
}

/**
 * The OpenSSH certificate encoder (PROTOCOL.certkeys) on node:crypto. Not sshpk: it cannot write
 * extensions or critical options and signs with SHA-1 for RSA CAs (see STACK.md).
 *
 * @module
 */
import { createPrivateKey, type KeyObject, randomBytes, sign } from "node:crypto";
import { encodeBase64 } from "../../lib/base64.js";
import { fromUtf8, utf8 } from "../../lib/bytes.js";
import { SshReader, SshWriter } from "../../lib/ssh-wire.js";
import type { CaKeySpec } from "../key-types.js";
import type { ParsedSshPublicKey } from "./parse-public-key.js";
import { type SshKeyAlgorithm, sshKeyAlgorithmOf, sshPublicKeyBlob } from "./public-key.js";

/** `user` certificates authenticate people to sshd; `host` certificates authenticate sshd to clients. */
export type SshCertificateType = "user" | "host";

/** What goes into one certificate; the CA comes from the signer. */
export interface SshCertificateParams {
  readonly publicKey: ParsedSshPublicKey;
  readonly type: SshCertificateType;
  /** A uint64. */
  readonly serial: bigint;
  readonly keyId: string;
  /** An empty list means "any principal" to OpenSSH: never issue that by accident. */
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

/** A CA key parsed once, signing any number of certificates synchronously. */
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
}

/** The extensions `ssh-keygen -s` grants user certificates by default; stock sshd needs `permit-pty` for a terminal. */
export const standardUserExtensions: Readonly<Record<string, string>> = Object.freeze({
  "permit-X11-forwarding": "",
  "permit-agent-forwarding": "",
  "permit-port-forwarding": "",
  "permit-pty": "",
  "permit-user-rc": "",
});

const certTypeCode = { user: 1, host: 2 } as const;

interface SigningMethod {
  readonly signatureAlgorithm: string;
  sign(data: Uint8Array): Uint8Array;
}

/** Splits an IEEE P1363 ECDSA signature (r || s) into the SSH form: mpint r, mpint s (RFC 5656 section 3.1.2). */
function ecdsaSignatureBlob(p1363: Uint8Array): Uint8Array {
  const half = p1363.length / 2;
  return new SshWriter().mpint(p1363.subarray(0, half)).mpint(p1363.subarray(half)).bytes();
}

function signingMethod(key: KeyObject, spec: CaKeySpec): SigningMethod {
  switch (spec.type) {
    case "ed25519":
      return { signatureAlgorithm: "ssh-ed25519", sign: (data) => sign(null, data, key) };
    case "ecdsa": {
      const { hash, name } = {
        "P-256": { hash: "sha256", name: "ecdsa-sha2-nistp256" },
        "P-384": { hash: "sha384", name: "ecdsa-sha2-nistp384" },
        "P-521": { hash: "sha512", name: "ecdsa-sha2-nistp521" },
      }[spec.curve];
      const options = { key, dsaEncoding: "ieee-p1363" } as const;
      return { signatureAlgorithm: name, sign: (data) => ecdsaSignatureBlob(sign(hash, data, options)) };
    }
    case "rsa":
      // OpenSSH 8.2+ refuses ssh-rsa (SHA-1) signatures on certificates (CASignatureAlgorithms).
      return { signatureAlgorithm: "rsa-sha2-512", sign: (data) => sign("sha512", data, key) };
  }
}

const specAlgorithm: Readonly<Record<string, SshKeyAlgorithm>> = {
  ed25519: "ssh-ed25519",
  "P-256": "ecdsa-sha2-nistp256",
  "P-384": "ecdsa-sha2-nistp384",
  "P-521": "ecdsa-sha2-nistp521",
  rsa: "ssh-rsa",
};

/** Refuses a key that is not what the spec says, so a mislabelled CA fails at load, not in sshd. */
function assertKeyMatchesSpec(key: KeyObject, spec: CaKeySpec): void {
  const expected = specAlgorithm[spec.type === "ecdsa" ? spec.curve : spec.type];
  const actual = sshKeyAlgorithmOf(key);
  if (actual !== expected) throw new TypeError(`CA key is ${actual}, but its spec says ${expected}`);
  if (spec.type === "rsa" && key.asymmetricKeyDetails?.modulusLength !== spec.bits) {
    throw new TypeError(
      `CA key has ${key.asymmetricKeyDetails?.modulusLength} bits, but its spec says ${spec.bits}`,
    );
  }
}

function assertText(value: string, what: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL would truncate the value in OpenSSH's C strings.
  if (value.includes("\u0000")) throw new TypeError(`${what} must not contain NUL`);
}

/**
 * Encodes a name/value list: each entry is `string name, string data`, sorted by name as
 * PROTOCOL.certkeys requires. A non-empty value is itself string-wrapped inside data; an empty
 * value is zero-length data, which is how flag extensions such as `permit-pty` are written.
 */
function optionList(entries: Readonly<Record<string, string>>, what: string): Uint8Array {
  const sorted = Object.entries(entries)
    .map(([name, value]) => [utf8(name), name, value] as const)
    .sort(([a], [b]) => compareBytes(a, b));
  const w = new SshWriter();
  for (const [nameBytes, name, value] of sorted) {
    if (name === "") throw new TypeError(`${what} names must not be empty`);
    assertText(name, `${what} name`);
    assertText(value, `${what} value`);
    w.string(nameBytes);
    w.string(value === "" ? new Uint8Array(0) : new SshWriter().string(value).bytes());
  }
  return w.bytes();
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
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
  if (fromUtf8(name) !== publicKey.algorithm)
    throw new TypeError("publicKey.blob does not match its algorithm");
  return publicKey.blob.subarray(4 + name.length);
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
  const key = createPrivateKey({ key: Buffer.from(caPrivateKeyPkcs8Der), format: "der", type: "pkcs8" });
  assertKeyMatchesSpec(key, caSpec);
  const method = signingMethod(key, caSpec);
  const publicKeyBlob = sshPublicKeyBlob(key);
  const publicKeyLine = `${specAlgorithm[caSpec.type === "ecdsa" ? caSpec.curve : caSpec.type]} ${encodeBase64(publicKeyBlob)}`;

  return {
    spec: caSpec,
    publicKeyBlob,
    publicKeyLine,
    signatureAlgorithm: method.signatureAlgorithm,
    sign(params) {
      const { publicKey, principals } = params;
      const after = seconds(params.validAfter, "validAfter");
      const before = seconds(params.validBefore, "validBefore");
      if (after >= before) throw new RangeError("validAfter must be before validBefore (in whole seconds)");
      const nonce = params.nonce ?? randomBytes(32);
      if (nonce.length < 16 || nonce.length > 64) throw new RangeError("nonce must be 16 to 64 bytes");
      if (principals.length === 0) throw new TypeError("a certificate needs at least one principal");
      assertText(params.keyId, "keyId");

      const principalList = new SshWriter();
      for (const principal of principals) {
        if (principal === "") throw new TypeError("principals must not be empty strings");
        assertText(principal, "principal");
        principalList.string(principal);
      }

      const body = new SshWriter()
        .string(`${publicKey.algorithm}-cert-v01@openssh.com`)
        .string(nonce)
        .raw(keyFields(publicKey))
        .uint64(params.serial)
        .uint32(certTypeCode[params.type])
        .string(params.keyId)
        .string(principalList.bytes())
        .uint64(after)
        .uint64(before)
        .string(optionList(params.criticalOptions, "critical option"))
        .string(optionList(params.extensions, "extension"))
        .string(new Uint8Array(0)) // reserved
        .string(publicKeyBlob)
        .bytes();
      const signature = new SshWriter().string(method.signatureAlgorithm).string(method.sign(body)).bytes();
      const cert = new SshWriter().raw(body).string(signature).bytes();

      const comment = params.comment ?? publicKey.comment;
      if (/[\r\n\0]/.test(comment)) throw new TypeError("comment must not contain line breaks or NUL");
      const line = `${publicKey.algorithm}-cert-v01@openssh.com ${encodeBase64(cert)}`;
      return comment === "" ? line : `${line} ${comment}`;
    },
  };
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

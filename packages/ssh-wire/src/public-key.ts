/**
 * OpenSSH encodings of public and private keys, written against RFC 4251/4253/5656/8709 and
 * OpenSSH's PROTOCOL.key rather than through a library.
 *
 * @module
 */
import { createHash, createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from "node:crypto";
import { decodeBase64Url, encodeBase64, encodeBase64NoPad } from "./base64.js";
import { concatBytes, toUint8Array } from "./bytes.js";
import { toPem } from "./pem.js";
import { SshReader, SshWriter } from "./wire.js";

/** The SSH public key algorithms we produce. */
export type SshKeyAlgorithm =
  | "ssh-ed25519"
  | "ecdsa-sha2-nistp256"
  | "ecdsa-sha2-nistp384"
  | "ecdsa-sha2-nistp521"
  | "ssh-rsa";

const curves = {
  "P-256": { name: "nistp256", size: 32 },
  "P-384": { name: "nistp384", size: 48 },
  "P-521": { name: "nistp521", size: 66 },
} as const;

function jwkBytes(jwk: JsonWebKey, member: "x" | "y" | "n" | "e" | "d" | "p" | "q" | "qi"): Uint8Array {
  const value = jwk[member];
  const bytes = typeof value === "string" ? decodeBase64Url(value) : undefined;
  if (bytes === undefined) throw new TypeError(`key has no usable JWK member "${member}"`);
  return bytes;
}

/** Left-pads a big-endian coordinate to the curve's field size, as SEC 1 point encoding requires. */
function padTo(bytes: Uint8Array, size: number): Uint8Array {
  if (bytes.length > size) throw new TypeError("EC coordinate longer than the curve size");
  const out = new Uint8Array(size);
  out.set(bytes, size - bytes.length);
  return out;
}

function toPublicKeyObject(key: Uint8Array | KeyObject): KeyObject {
  if (key instanceof Uint8Array)
    return createPublicKey({ key: Buffer.from(key), format: "der", type: "spki" });
  // A private KeyObject yields its public half.
  return key.type === "public" ? key : createPublicKey(key);
}

function ecCurve(jwk: JsonWebKey): (typeof curves)[keyof typeof curves] {
  const curve = curves[jwk.crv as keyof typeof curves];
  if (curve === undefined) throw new TypeError(`unsupported EC curve ${String(jwk.crv)}`);
  return curve;
}

/** The uncompressed SEC 1 point 0x04 || x || y. */
function ecPoint(jwk: JsonWebKey, size: number): Uint8Array {
  return concatBytes(new Uint8Array([4]), padTo(jwkBytes(jwk, "x"), size), padTo(jwkBytes(jwk, "y"), size));
}

/** Writes the public key fields that both the public blob and the private key section start with. */
function writePublicFields(w: SshWriter, jwk: JsonWebKey): SshKeyAlgorithm {
  switch (jwk.kty) {
    case "OKP": {
      if (jwk.crv !== "Ed25519") throw new TypeError(`unsupported OKP curve ${String(jwk.crv)}`);
      w.string("ssh-ed25519").string(jwkBytes(jwk, "x"));
      return "ssh-ed25519";
    }
    case "EC": {
      const curve = ecCurve(jwk);
      const algorithm = `ecdsa-sha2-${curve.name}` as SshKeyAlgorithm;
      w.string(algorithm).string(curve.name).string(ecPoint(jwk, curve.size));
      return algorithm;
    }
    case "RSA": {
      // RFC 4253 section 6.6: e before n.
      w.string("ssh-rsa").mpint(jwkBytes(jwk, "e")).mpint(jwkBytes(jwk, "n"));
      return "ssh-rsa";
    }
    default:
      throw new TypeError(`unsupported key type ${String(jwk.kty)}`);
  }
}

/**
 * The SSH wire-format public key blob (the base64 part of an authorized_keys line).
 *
 * @param key SubjectPublicKeyInfo DER, or a node KeyObject (public or private).
 */
export function sshPublicKeyBlob(key: Uint8Array | KeyObject): Uint8Array {
  const jwk = toPublicKeyObject(key).export({ format: "jwk" });
  const w = new SshWriter();
  writePublicFields(w, jwk);
  return w.bytes();
}

/** The SSH key algorithm name for a key, e.g. `ecdsa-sha2-nistp384`. */
export function sshKeyAlgorithmOf(key: Uint8Array | KeyObject): SshKeyAlgorithm {
  const jwk = toPublicKeyObject(key).export({ format: "jwk" });
  return writePublicFields(new SshWriter(), jwk);
}

function assertComment(comment: string): void {
  if (/[\r\n\0]/.test(comment)) throw new TypeError("SSH key comment must not contain line breaks or NUL");
}

/**
 * The OpenSSH `authorized_keys` / `.pub` line: `<algorithm> <base64 blob>[ <comment>]`.
 *
 * @example
 * sshPublicKeyLine(key.publicKeySpkiDer, "ca@example"); // "ssh-ed25519 AAAAC3Nz... ca@example"
 */
export function sshPublicKeyLine(key: Uint8Array | KeyObject, comment?: string): string {
  const jwk = toPublicKeyObject(key).export({ format: "jwk" });
  const w = new SshWriter();
  const algorithm = writePublicFields(w, jwk);
  const line = `${algorithm} ${encodeBase64(w.bytes())}`;
  if (comment === undefined || comment === "") return line;
  assertComment(comment);
  return `${line} ${comment}`;
}

/** The SHA-256 fingerprint of a public key blob exactly as `ssh-keygen -l` prints it: `SHA256:<base64, no padding>`. */
export function sshFingerprintSha256(blob: Uint8Array): string {
  return `SHA256:${encodeBase64NoPad(toUint8Array(createHash("sha256").update(blob).digest()))}`;
}

/**
 * An unencrypted private key in OpenSSH's own `openssh-key-v1` format (PROTOCOL.key), which every
 * OpenSSH release loads. OpenSSH cannot read Ed25519 keys from PKCS#8 PEM, so host keys and test
 * user keys go through this.
 *
 * The output is deterministic: the "check int" (only meaningful for encrypted keys) is derived
 * from the public key rather than drawn at random.
 *
 * @param pkcs8Der PKCS#8 PrivateKeyInfo DER of an Ed25519, ECDSA (P-256/384/521) or RSA key.
 */
export function opensshPrivateKey(pkcs8Der: Uint8Array, comment = ""): string {
  assertComment(comment);
  const privateKey = createPrivateKey({ key: Buffer.from(pkcs8Der), format: "der", type: "pkcs8" });
  const jwk = privateKey.export({ format: "jwk" });

  const publicBlob = new SshWriter();
  writePublicFields(publicBlob, jwk);
  const blob = publicBlob.bytes();
  const digest = createHash("sha256").update(blob).digest();
  const checkInt = new DataView(digest.buffer, digest.byteOffset, 4).getUint32(0);

  const section = new SshWriter().uint32(checkInt).uint32(checkInt);
  switch (jwk.kty) {
    case "OKP": {
      const pub = jwkBytes(jwk, "x");
      // OpenSSH stores the 32-byte seed followed by the public key.
      section
        .string("ssh-ed25519")
        .string(pub)
        .string(concatBytes(jwkBytes(jwk, "d"), pub));
      break;
    }
    case "EC": {
      const curve = ecCurve(jwk);
      section
        .string(`ecdsa-sha2-${curve.name}`)
        .string(curve.name)
        .string(ecPoint(jwk, curve.size))
        .mpint(jwkBytes(jwk, "d"));
      break;
    }
    case "RSA": {
      // PROTOCOL.key order: n, e, d, iqmp, p, q. JWK "qi" is q^-1 mod p, which is OpenSSH's iqmp.
      section
        .string("ssh-rsa")
        .mpint(jwkBytes(jwk, "n"))
        .mpint(jwkBytes(jwk, "e"))
        .mpint(jwkBytes(jwk, "d"))
        .mpint(jwkBytes(jwk, "qi"))
        .mpint(jwkBytes(jwk, "p"))
        .mpint(jwkBytes(jwk, "q"));
      break;
    }
    default:
      throw new TypeError(`unsupported key type ${String(jwk.kty)}`);
  }
  section.string(comment);
  // Pad to the cipher block size (8 for "none") with 1, 2, 3, ...
  for (let pad = 1; section.length % 8 !== 0; pad++) section.raw(new Uint8Array([pad]));

  const body = new SshWriter()
    .raw(new TextEncoder().encode("openssh-key-v1\0"))
    .string("none") // cipher
    .string("none") // kdf
    .string(new Uint8Array(0)) // kdf options
    .uint32(1) // number of keys
    .string(blob)
    .string(section.bytes())
    .bytes();
  return toPem("OPENSSH PRIVATE KEY", body, 70);
}

/**
 * The SubjectPublicKeyInfo of an authorized_keys line's key (ssh-ed25519, ecdsa-sha2-nistp*,
 * ssh-rsa): the inverse of {@link sshPublicKeyLine}.
 *
 * @throws {TypeError} for another key type; RangeError for truncated key data.
 */
export function spkiOfSshPublicKeyLine(line: string): Uint8Array {
  const [, encoded = ""] = line.trim().split(/\s+/);
  const r = new SshReader(new Uint8Array(Buffer.from(encoded, "base64")));
  const algorithm = r.text();
  const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
  const unsigned = (mpint: Uint8Array) => (mpint[0] === 0 ? mpint.subarray(1) : mpint);
  let jwk: JsonWebKey;
  if (algorithm === "ssh-ed25519") {
    jwk = { kty: "OKP", crv: "Ed25519", x: b64url(r.string()) };
  } else if (algorithm === "ssh-rsa") {
    const e = unsigned(r.string());
    jwk = { kty: "RSA", e: b64url(e), n: b64url(unsigned(r.string())) };
  } else {
    const entry = Object.entries(curves).find(([, curve]) => `ecdsa-sha2-${curve.name}` === algorithm);
    if (entry === undefined) throw new TypeError(`unsupported SSH key type ${algorithm}`);
    const [crv, { size }] = entry;
    r.string();
    const point = r.string();
    jwk = {
      kty: "EC",
      crv,
      x: b64url(point.subarray(1, 1 + size)),
      y: b64url(point.subarray(1 + size)),
    };
  }
  return toUint8Array(createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "der" }));
}

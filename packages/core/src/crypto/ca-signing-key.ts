/**
 * A CA private key as the certificate encoders see it: a public key and a `sign` call. Where the
 * private half lives (sealed in the database and opened into memory, or inside a PKCS#11 token)
 * is the implementation's business; the SSH and X.509 encoders never touch key bytes.
 *
 * @module
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { sshKeyAlgorithmOf } from "@wap/ssh-wire";
import { toUint8Array } from "../lib/bytes.js";
import type { CaKeySpec } from "./key-types.js";

/** The digest RSA signatures use: SSH certificates sign with SHA-512, X.509 with SHA-256. */
export type RsaHash = "sha256" | "sha512";

/** A CA private key that signs; its private half is out of the caller's reach. */
export interface CaSigningKey {
  readonly spec: CaKeySpec;
  /** X.509 SubjectPublicKeyInfo of the key. */
  readonly publicKeySpkiDer: Uint8Array;
  /**
   * Signs `data`. Ed25519: pure EdDSA. ECDSA: with the curve's hash (P-256 SHA-256, P-384
   * SHA-384, P-521 SHA-512), as IEEE P1363 `r || s`. RSA: PKCS#1 v1.5 with `rsaHash`.
   */
  sign(data: Uint8Array, rsaHash: RsaHash): Uint8Array;
  /**
   * The same signature made off the event loop (libuv's thread pool), for keys whose signing
   * is worth the hand-off; absent, callers sign with {@link CaSigningKey.sign}.
   */
  signAsync?(data: Uint8Array, rsaHash: RsaHash): Promise<Uint8Array>;
}

/** The hash ECDSA signatures of a curve use, as node:crypto names it. */
export const ecdsaHashOf = { "P-256": "sha256", "P-384": "sha384", "P-521": "sha512" } as const;

const specAlgorithm: Readonly<Record<string, string>> = {
  ed25519: "ssh-ed25519",
  "P-256": "ecdsa-sha2-nistp256",
  "P-384": "ecdsa-sha2-nistp384",
  "P-521": "ecdsa-sha2-nistp521",
  rsa: "ssh-rsa",
};

/** Refuses a key that is not what the spec says, so a mislabelled CA fails at load, not in sshd. */
export function assertKeyMatchesSpec(key: KeyObject, spec: CaKeySpec): void {
  const expected = specAlgorithm[spec.type === "ecdsa" ? spec.curve : spec.type];
  const actual = sshKeyAlgorithmOf(key);
  if (actual !== expected) throw new TypeError(`CA key is ${actual}, but its spec says ${expected}`);
  if (spec.type === "rsa" && key.asymmetricKeyDetails?.modulusLength !== spec.bits) {
    throw new TypeError(
      `CA key has ${key.asymmetricKeyDetails?.modulusLength} bits, but its spec says ${spec.bits}`,
    );
  }
}

/**
 * A software key: the PKCS#8 private key parsed once into a node:crypto key object.
 *
 * @throws {TypeError} when the key is not of the kind `spec` says.
 */
export function softwareSigningKey(privateKeyPkcs8Der: Uint8Array, spec: CaKeySpec): CaSigningKey {
  const key = createPrivateKey({ key: Buffer.from(privateKeyPkcs8Der), format: "der", type: "pkcs8" });
  assertKeyMatchesSpec(key, spec);
  const publicKeySpkiDer = toUint8Array(createPublicKey(key).export({ type: "spki", format: "der" }));
  // The digest and key options node:crypto signs with: Ed25519 none (pure EdDSA), ECDSA its
  // curve's hash as r || s, RSA the caller's.
  const how = (rsaHash: RsaHash) => {
    switch (spec.type) {
      case "ed25519":
        return { hash: null, key };
      case "ecdsa":
        return { hash: ecdsaHashOf[spec.curve], key: { key, dsaEncoding: "ieee-p1363" } as const };
      case "rsa":
        return { hash: rsaHash, key };
    }
  };
  // Only RSA's digest varies by call: the others are worked out once.
  const fixed = spec.type === "rsa" ? undefined : how("sha512");
  return {
    spec,
    publicKeySpkiDer,
    sign: (data, rsaHash) => {
      const { hash, key: signingKey } = fixed ?? how(rsaHash);
      return toUint8Array(sign(hash, data, signingKey));
    },
    // With a callback, node:crypto signs on a thread of libuv's pool: the event loop goes on
    // serving other requests meanwhile.
    signAsync: (data, rsaHash) => {
      const { hash, key: signingKey } = fixed ?? how(rsaHash);
      return new Promise((resolve, reject) =>
        sign(hash, data, signingKey, (error, signature) =>
          error ? reject(error) : resolve(toUint8Array(signature)),
        ),
      );
    },
  };
}

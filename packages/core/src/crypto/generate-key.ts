/**
 * Key pair generation for certificate authorities and signing keys.
 *
 * @module
 */
import { generateKeyPair as nodeGenerateKeyPair } from "node:crypto";
import { toUint8Array } from "../lib/bytes.js";
import type { CaKeySpec } from "./key-types.js";

/** A freshly generated key pair in portable DER encodings. */
export interface GeneratedKey {
  readonly spec: CaKeySpec;
  /** PKCS#8 PrivateKeyInfo, unencrypted. Seal it with a KeyStore before storing it. */
  readonly privateKeyPkcs8Der: Uint8Array;
  /** X.509 SubjectPublicKeyInfo. */
  readonly publicKeySpkiDer: Uint8Array;
}

const encodings = {
  publicKeyEncoding: { type: "spki", format: "der" },
  privateKeyEncoding: { type: "pkcs8", format: "der" },
} as const;

/**
 * Generates a key pair for `spec` on libuv's thread pool. Never the `Sync` variant: an RSA-4096
 * key can take seconds and would stall every request on the event loop.
 *
 * @example
 * const key = await generateKeyPair({ type: "ecdsa", curve: "P-256" });
 */
export function generateKeyPair(spec: CaKeySpec): Promise<GeneratedKey> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, publicKey: Buffer, privateKey: Buffer) => {
      if (err) {
        reject(err);
        return;
      }
      resolve({
        spec,
        privateKeyPkcs8Der: toUint8Array(privateKey),
        publicKeySpkiDer: toUint8Array(publicKey),
      });
    };
    switch (spec.type) {
      case "ed25519":
        nodeGenerateKeyPair("ed25519", encodings, done);
        return;
      case "ecdsa":
        nodeGenerateKeyPair("ec", { namedCurve: spec.curve, ...encodings }, done);
        return;
      case "rsa":
        nodeGenerateKeyPair("rsa", { modulusLength: spec.bits, publicExponent: 0x10001, ...encodings }, done);
        return;
    }
  });
}

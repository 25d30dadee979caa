/**
 * @peculiar/x509 signs through WebCrypto (`crypto.subtle.sign(algorithm, key, data)`). To sign
 * with any {@link CaSigningKey}, including one inside a PKCS#11 token, the generators get a
 * crypto object that is node's WebCrypto for everything but `sign`, which goes to the key.
 *
 * @module
 */
import { webcrypto } from "node:crypto";
import type * as x509 from "@peculiar/x509";
import type { CaSigningKey } from "../ca-signing-key.js";
import type { CaKeySpec } from "../key-types.js";

type EcdsaParams = webcrypto.EcdsaParams;
type EcKeyImportParams = webcrypto.EcKeyImportParams;
type RsaHashedImportParams = webcrypto.RsaHashedImportParams;
type X509Crypto = Parameters<typeof x509.cryptoProvider.set>[0];

/** WebCrypto import and signature parameters for a key spec. */
export function webCryptoAlgorithms(spec: CaKeySpec): {
  readonly importAlgorithm: RsaHashedImportParams | EcKeyImportParams | webcrypto.Algorithm;
  readonly signingAlgorithm: webcrypto.Algorithm | EcdsaParams;
} {
  switch (spec.type) {
    case "ed25519":
      return { importAlgorithm: { name: "Ed25519" }, signingAlgorithm: { name: "Ed25519" } };
    case "ecdsa": {
      const hash = { "P-256": "SHA-256", "P-384": "SHA-384", "P-521": "SHA-512" }[spec.curve];
      return {
        importAlgorithm: { name: "ECDSA", namedCurve: spec.curve } satisfies EcKeyImportParams,
        signingAlgorithm: { name: "ECDSA", hash } satisfies EcdsaParams,
      };
    }
    case "rsa":
      return {
        importAlgorithm: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } satisfies RsaHashedImportParams,
        signingAlgorithm: { name: "RSASSA-PKCS1-v1_5" },
      };
  }
}

/** What the @peculiar/x509 generators take to sign with `key`. */
export interface X509Signing {
  readonly crypto: X509Crypto;
  readonly signingKey: webcrypto.CryptoKey;
  readonly signingAlgorithm: webcrypto.Algorithm;
}

/** The generator arguments that sign with `key` (RSA: PKCS#1 v1.5 with SHA-256). */
export function x509SigningOf(key: CaSigningKey): X509Signing {
  const { importAlgorithm, signingAlgorithm } = webCryptoAlgorithms(key.spec);
  // The generators read only `algorithm` (merged into the signature algorithm) from the key.
  const signingKey = { algorithm: importAlgorithm, type: "private" } as unknown as webcrypto.CryptoKey;
  const subtle = Object.create(webcrypto.subtle) as webcrypto.SubtleCrypto;
  subtle.sign = async (_algorithm, _key, data) => {
    const bytes = ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);
    const signature = key.sign(bytes, "sha256");
    return signature.buffer.slice(
      signature.byteOffset,
      signature.byteOffset + signature.byteLength,
    ) as ArrayBuffer;
  };
  const crypto = {
    subtle,
    getRandomValues: webcrypto.getRandomValues.bind(webcrypto),
    randomUUID: webcrypto.randomUUID.bind(webcrypto),
  } as unknown as X509Crypto;
  return { crypto, signingKey, signingAlgorithm };
}

/**
 * Self-signed X.509 CA certificates, built with @peculiar/x509 on WebCrypto.
 *
 * @module
 */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { stripLeadingZeros, toHex } from "../../lib/bytes.js";
import type { GeneratedKey } from "../generate-key.js";
import type { CaKeySpec } from "../key-types.js";

type WebCrypto = typeof webcrypto;
type Algorithm = webcrypto.Algorithm;
type EcdsaParams = webcrypto.EcdsaParams;
type EcKeyImportParams = webcrypto.EcKeyImportParams;
type RsaHashedImportParams = webcrypto.RsaHashedImportParams;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

// Node's webcrypto types and the DOM types @peculiar/x509 is written against differ only nominally.
const crypto = webcrypto as WebCrypto & Parameters<typeof x509.cryptoProvider.set>[0];
// @peculiar/x509 reaches for its global provider in places that take no crypto argument.
x509.cryptoProvider.set(crypto);

/** What a CA certificate names and how long it is valid. */
export interface CreateCaCertificateParams {
  readonly key: GeneratedKey;
  readonly subject: { readonly commonName: string; readonly organization?: string };
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** Random bytes from the caller (16 recommended, at most 20); the top bit is cleared so the serial is positive. */
  readonly serialNumber: Uint8Array;
}

/** A created CA certificate. */
export interface CaCertificate {
  readonly pem: string;
  /** The serial as lower-case hex of its minimal bytes; `openssl x509 -serial` prints the same in upper case. */
  readonly serialHex: string;
  /** The subject in certificate order with RFC 4514 escaping, e.g. `O=Example\\, Inc., CN=Example CA`. */
  readonly subject: string;
  /** Validity as encoded in the certificate (whole seconds). */
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** WebCrypto import and signature parameters for a key spec. */
export function webCryptoAlgorithms(spec: CaKeySpec): {
  readonly importAlgorithm: RsaHashedImportParams | EcKeyImportParams | Algorithm;
  readonly signingAlgorithm: Algorithm | EcdsaParams;
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

/** Imports a generated key into WebCrypto for signing. The private key is not extractable. */
export async function importSigningKeyPair(key: GeneratedKey): Promise<CryptoKeyPair> {
  const { importAlgorithm } = webCryptoAlgorithms(key.spec);
  const [privateKey, publicKey] = await Promise.all([
    crypto.subtle.importKey("pkcs8", key.privateKeyPkcs8Der, importAlgorithm, false, ["sign"]),
    crypto.subtle.importKey("spki", key.publicKeySpkiDer, importAlgorithm, true, ["verify"]),
  ]);
  return { privateKey, publicKey };
}

/** A positive, minimally encoded serial: top bit cleared, leading zero bytes dropped. */
export function positiveSerial(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 0 || bytes.length > 20) {
    throw new RangeError("serialNumber must be 1 to 20 bytes (RFC 5280 section 4.1.2.2)");
  }
  const copy = new Uint8Array(bytes);
  copy[0] = copy[0]! & 0x7f;
  const serial = stripLeadingZeros(copy);
  // Zero is not a valid serial; only reachable with all-zero input.
  if (serial.length === 1 && serial[0] === 0) throw new RangeError("serialNumber must not be zero");
  return serial;
}

/**
 * Creates a self-signed CA certificate: BasicConstraints CA:TRUE pathlen:0 and KeyUsage
 * keyCertSign+cRLSign (both critical), subject and authority key identifiers. Signed with Ed25519,
 * ECDSA with the hash matching the curve, or RSASSA-PKCS1-v1_5 with SHA-256.
 *
 * @example
 * const ca = await createCaCertificate({
 *   key: await generateKeyPair({ type: "ecdsa", curve: "P-256" }),
 *   subject: { commonName: "Acme SSH CA", organization: "Acme" },
 *   notBefore: clock.now(),
 *   notAfter: new Date(clock.now().getTime() + 10 * 365 * 86400_000),
 *   serialNumber: random.bytes(16),
 * });
 */
export async function createCaCertificate(params: CreateCaCertificateParams): Promise<CaCertificate> {
  const { key, subject, notBefore, notAfter } = params;
  if (subject.commonName === "") throw new TypeError("subject.commonName must not be empty");
  if (!(notBefore.getTime() < notAfter.getTime())) throw new RangeError("notBefore must be before notAfter");

  const serialHex = toHex(positiveSerial(params.serialNumber));
  const keys = await importSigningKeyPair(key);
  const { signingAlgorithm } = webCryptoAlgorithms(key.spec);

  // The object form keeps values literal: plain strings are parsed by @peculiar/x509 (a leading
  // "#" is read as hex DER, quotes and backslashes are unescaped), so user-chosen names would change.
  const name: x509.JsonNameParams = [];
  if (subject.organization !== undefined && subject.organization !== "") {
    name.push({ O: [{ utf8String: subject.organization }] });
  }
  name.push({ CN: [{ utf8String: subject.commonName }] });

  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialHex,
      name: new x509.Name(name),
      notBefore,
      notAfter,
      keys,
      signingAlgorithm,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );

  return {
    pem: cert.toString("pem"),
    serialHex,
    subject: cert.subject,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
  };
}

/**
 * Self-signed X.509 CA certificates, built with @peculiar/x509 on WebCrypto.
 *
 * @module
 */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";
import { stripLeadingZeros, toHex } from "../../lib/bytes.js";
import { type CaSigningKey, softwareSigningKey } from "../ca-signing-key.js";
import type { GeneratedKey } from "../generate-key.js";
import { x509SigningOf } from "./signing-key.js";

type WebCrypto = typeof webcrypto;

// Node's webcrypto types and the DOM types @peculiar/x509 is written against differ only nominally.
const crypto = webcrypto as WebCrypto & Parameters<typeof x509.cryptoProvider.set>[0];
// @peculiar/x509 reaches for its global provider in places that take no crypto argument.
x509.cryptoProvider.set(crypto);

/** What a CA certificate names and how long it is valid. */
export interface CreateCaCertificateParams {
  /** A generated software key, or a key that signs elsewhere (a PKCS#11 token). */
  readonly key: GeneratedKey | CaSigningKey;
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
  const signingKey = "privateKeyPkcs8Der" in key ? softwareSigningKey(key.privateKeyPkcs8Der, key.spec) : key;
  const signing = x509SigningOf(signingKey);

  // The object form keeps values literal: plain strings are parsed by @peculiar/x509 (a leading
  // "#" is read as hex DER, quotes and backslashes are unescaped), so user-chosen names would change.
  const name: x509.JsonNameParams = [];
  if (subject.organization !== undefined && subject.organization !== "") {
    name.push({ O: [{ utf8String: subject.organization }] });
  }
  name.push({ CN: [{ utf8String: subject.commonName }] });

  const ski = await x509.SubjectKeyIdentifierExtension.create(signingKey.publicKeySpkiDer, false, crypto);
  const issuer = new x509.Name(name);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialHex,
      subject: issuer,
      issuer,
      notBefore,
      notAfter,
      publicKey: signingKey.publicKeySpkiDer,
      signingKey: signing.signingKey,
      signingAlgorithm: signing.signingAlgorithm,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        ski,
        new x509.AuthorityKeyIdentifierExtension(ski.keyId, false),
      ],
    },
    signing.crypto,
  );

  return {
    pem: cert.toString("pem"),
    serialHex,
    subject: cert.subject,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
  };
}

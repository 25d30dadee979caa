/**
 * X.509 leaf issuance from PKCS#10 CSRs: a strict CSR parser (read with the @peculiar/asn1-*
 * schemas, DER only, signature verified with node:crypto over the exact bytes signed) and a
 * signer that imports the CA key once, built with @peculiar/x509.
 *
 * @module
 */
import "reflect-metadata";
import { createHash, createPublicKey, type KeyObject, verify, webcrypto } from "node:crypto";
import { isIP } from "node:net";
import { CertificationRequest } from "@peculiar/asn1-csr";
import { AsnConvert, AsnIntegerBigIntConverter } from "@peculiar/asn1-schema";
import { SubjectAlternativeName } from "@peculiar/asn1-x509";
import * as x509 from "@peculiar/x509";
import { encodeBase64NoPad } from "../../lib/base64.js";
import { toHex, toUint8Array } from "../../lib/bytes.js";
import { fromPem } from "../../lib/pem.js";
import { type CaSigningKey, softwareSigningKey } from "../ca-signing-key.js";
import type { CaKeySpec } from "../key-types.js";
import { positiveSerial } from "./ca-certificate.js";
import { x509SigningOf } from "./signing-key.js";

// Node's webcrypto types and the DOM types @peculiar/x509 is written against differ only nominally.
const crypto = webcrypto as typeof webcrypto & Parameters<typeof x509.cryptoProvider.set>[0];

/** Subject alternative names by type, as a CSR requests them and a certificate carries them. */
export interface SubjectAltNames {
  readonly dns: readonly string[];
  /** IPv4 dotted or IPv6 text form. */
  readonly ip: readonly string[];
  readonly email: readonly string[];
  readonly uri: readonly string[];
}

/** A CSR whose signature has been verified and whose key is one we sign. */
export interface ParsedCsr {
  readonly der: Uint8Array;
  /** The requested subject in RFC 4514 form, for logs; the issuer decides the real subject. */
  readonly subject: string;
  /** The one CN of the subject, or `undefined` when there is none. */
  readonly commonName: string | undefined;
  readonly publicKey: {
    readonly keyType: "ed25519" | "ecdsa" | "rsa";
    /** 256 for Ed25519, the curve size for ECDSA, the modulus length for RSA. */
    readonly bits: number;
    /** SubjectPublicKeyInfo DER, exactly as in the CSR. */
    readonly spkiDer: Uint8Array;
    /** `SHA256:<base64>` of the SubjectPublicKeyInfo DER. */
    readonly fingerprint: string;
  };
  /** The requested names from the extensionRequest attribute (empty lists when there is none). */
  readonly sans: SubjectAltNames;
}

/**
 * A CSR that cannot be signed. `reason` is meant for the developer who sent it and is safe to
 * return in an `invalid_argument` message.
 */
export class CsrParseError extends Error {
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = new.target.name;
    this.reason = reason;
  }
}

function fail(reason: string): never {
  throw new CsrParseError(reason);
}

const MAX_PEM_LENGTH = 65536;
const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 16384;

// The signature algorithms we verify; RSA-PSS and SHA-1 are refused.
const signatureAlgorithms: Readonly<
  Record<string, { keyType: "ed25519" | "ecdsa" | "rsa"; hash: string | null }>
> = {
  "1.3.101.112": { keyType: "ed25519", hash: null }, // Ed25519
  "1.2.840.10045.4.3.2": { keyType: "ecdsa", hash: "sha256" }, // ecdsa-with-SHA256
  "1.2.840.10045.4.3.3": { keyType: "ecdsa", hash: "sha384" },
  "1.2.840.10045.4.3.4": { keyType: "ecdsa", hash: "sha512" },
  "1.2.840.113549.1.1.11": { keyType: "rsa", hash: "sha256" }, // sha256WithRSAEncryption
  "1.2.840.113549.1.1.12": { keyType: "rsa", hash: "sha384" },
  "1.2.840.113549.1.1.13": { keyType: "rsa", hash: "sha512" },
};

const curveBits: Readonly<Record<string, number>> = { prime256v1: 256, secp384r1: 384, secp521r1: 521 };

/** The bytes `buffer` holds, as the Uint8Array node:crypto takes. */
const bytesOf = (buffer: ArrayBuffer | ArrayBufferView): Uint8Array =>
  ArrayBuffer.isView(buffer)
    ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    : new Uint8Array(buffer);

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/**
 * The pieces of `CertificationRequest` (RFC 2986) needed to verify it. DER only: the schema
 * reads BER, so the request must encode back to exactly its input (one encoding per value is
 * what lets the signed bytes and the key be read as the signer wrote them).
 */
function splitCsr(der: Uint8Array): {
  tbs: Uint8Array;
  spki: Uint8Array;
  algorithmOid: string;
  signature: Uint8Array;
} {
  let csr: CertificationRequest;
  try {
    csr = AsnConvert.parse(der, CertificationRequest);
  } catch (cause) {
    throw new CsrParseError("CSR structure is malformed", { cause });
  }
  const encoded = bytesOf(AsnConvert.serialize(csr));
  if (!sameBytes(encoded, der)) {
    if (encoded.length < der.length && sameBytes(encoded, der.subarray(0, encoded.length))) {
      fail("unexpected bytes after the CSR");
    }
    fail("CSR is not DER: BER forms (indefinite lengths, lengths not minimal) are refused");
  }
  const info = csr.certificationRequestInfo;
  if (info.version !== 0) fail("CSR version must be 1 (0)");
  if (csr.certificationRequestInfoRaw === undefined) fail("CSR info is malformed");
  const signature = bytesOf(csr.signature);
  if (signature.length === 0) fail("CSR signature is malformed");
  return {
    tbs: bytesOf(csr.certificationRequestInfoRaw),
    spki: bytesOf(AsnConvert.serialize(info.subjectPKInfo)),
    algorithmOid: csr.signatureAlgorithm.algorithm,
    signature,
  };
}

function checkPublicKey(key: KeyObject): { keyType: "ed25519" | "ecdsa" | "rsa"; bits: number } {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "ed25519":
      return { keyType: "ed25519", bits: 256 };
    case "ec": {
      const bits = curveBits[details.namedCurve ?? ""];
      if (bits === undefined) fail(`unsupported EC curve ${details.namedCurve}: use P-256, P-384 or P-521`);
      return { keyType: "ecdsa", bits };
    }
    case "rsa": {
      const bits = details.modulusLength ?? 0;
      const e = details.publicExponent ?? 0n;
      if (bits < MIN_RSA_BITS) fail(`RSA keys must have at least ${MIN_RSA_BITS} bits (got ${bits})`);
      if (bits > MAX_RSA_BITS) fail(`RSA keys must have at most ${MAX_RSA_BITS} bits (got ${bits})`);
      if (e < 3n || e % 2n === 0n || e >= 2n ** 256n) fail("RSA public exponent is not sane");
      return { keyType: "rsa", bits };
    }
    default:
      fail(`unsupported public key type ${String(key.asymmetricKeyType)}: use Ed25519, ECDSA or RSA`);
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is being refused.
const controlCharacters = /[\u0000-\u001f\u007f]/;

function readSans(csr: x509.Pkcs10CertificateRequest): SubjectAltNames {
  const dns: string[] = [];
  const ip: string[] = [];
  const email: string[] = [];
  const uri: string[] = [];
  const extensions = csr.extensions.filter((e) => e.type === "2.5.29.17");
  if (extensions.length > 1) fail("CSR requests more than one subjectAltName extension");
  const extension = extensions[0];
  if (extension === undefined) return { dns, ip, email, uri };

  let names: x509.JsonGeneralNames;
  try {
    names = new x509.SubjectAlternativeNameExtension(extension.rawData).names.toJSON();
  } catch (cause) {
    throw new CsrParseError("CSR subjectAltName is malformed", { cause });
  }
  // @peculiar/x509 silently drops names it cannot show (otherName, x400Address, ...): count them ourselves.
  let requested: number;
  try {
    requested = AsnConvert.parse(extension.value, SubjectAlternativeName).length;
  } catch (cause) {
    throw new CsrParseError("CSR subjectAltName is malformed", { cause });
  }
  if (names.length !== requested) {
    fail("CSR requests a subjectAltName of unsupported type: use DNS, IP, email or URI");
  }
  for (const { type, value } of names) {
    if (value === "" || controlCharacters.test(value) || /\s/.test(value)) {
      fail(`CSR requests an empty or malformed ${type} name`);
    }
    switch (type) {
      case "dns":
        dns.push(value);
        break;
      case "ip":
        if (isIP(value) === 0) fail("CSR requests a malformed IP address name");
        ip.push(value);
        break;
      case "email":
        email.push(value);
        break;
      case "url":
        uri.push(value);
        break;
      default:
        fail(`CSR requests a subjectAltName of unsupported type ${type}: use DNS, IP, email or URI`);
    }
  }
  return { dns, ip, email, uri };
}

function parseCsrPem(pem: string): ParsedCsr {
  if (typeof pem !== "string") fail("CSR must be a PEM string");
  if (pem.length > MAX_PEM_LENGTH) fail(`CSR is longer than ${MAX_PEM_LENGTH} characters`);
  // Some older tools write NEW CERTIFICATE REQUEST.
  const der = fromPem("CERTIFICATE REQUEST", pem) ?? fromPem("NEW CERTIFICATE REQUEST", pem);
  if (der === undefined) fail("expected a PEM block -----BEGIN CERTIFICATE REQUEST-----");
  if (der.length === 0) fail("CSR is empty");

  const parts = splitCsr(der);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(parts.spki), format: "der", type: "spki" });
  } catch (cause) {
    throw new CsrParseError("CSR public key is malformed", { cause });
  }
  // The key first: "unsupported key type" is the more useful message when both are wrong.
  const { keyType, bits } = checkPublicKey(key);
  const algorithm = signatureAlgorithms[parts.algorithmOid];
  if (algorithm === undefined) {
    fail("unsupported CSR signature algorithm: use Ed25519, ECDSA with SHA-2, or RSA PKCS#1 v1.5 with SHA-2");
  }
  if (keyType !== algorithm.keyType) fail("CSR signature algorithm does not match its public key");
  let valid: boolean;
  try {
    valid = verify(algorithm.hash, parts.tbs, key, parts.signature);
  } catch (cause) {
    throw new CsrParseError("CSR signature is malformed", { cause });
  }
  if (!valid) fail("CSR signature does not verify");

  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(der);
  } catch (cause) {
    throw new CsrParseError("CSR is malformed", { cause });
  }
  const commonNames = csr.subjectName.getField("CN");
  if (commonNames.length > 1) fail("CSR subject has more than one CN");
  const commonName = commonNames[0];
  if (commonName !== undefined && (commonName === "" || controlCharacters.test(commonName))) {
    fail("CSR subject CN is empty or contains control characters");
  }

  const spkiDer = toUint8Array(parts.spki);
  return {
    der: toUint8Array(der),
    subject: csr.subject,
    commonName,
    publicKey: {
      keyType,
      bits,
      spkiDer,
      fingerprint: `SHA256:${encodeBase64NoPad(toUint8Array(createHash("sha256").update(spkiDer).digest()))}`,
    },
    sans: readSans(csr),
  };
}

/**
 * Parses a PEM PKCS#10 CSR and verifies its signature. Accepted keys: Ed25519 (PureEdDSA), ECDSA
 * P-256/384/521, RSA of at least 2048 bits; signatures: Ed25519, ECDSA or RSA PKCS#1 v1.5 with
 * SHA-256/384/512. Requested SANs may be DNS, IP, email or URI.
 *
 * @throws {CsrParseError} for every input that is not such a CSR, and never any other error.
 *
 * @example
 * const csr = parseCsr(request.csr);
 * csr.commonName; // "alice"
 * csr.sans.dns; // ["alice.example.com"]
 */
export function parseCsr(pem: string): ParsedCsr {
  try {
    return parseCsrPem(pem);
  } catch (err) {
    if (err instanceof CsrParseError) throw err;
    throw new CsrParseError("CSR is malformed", { cause: err });
  }
}

/** The CA a leaf is issued under. */
export interface X509LeafCa {
  readonly certificatePem: string;
  /** PKCS#8 PrivateKeyInfo of the CA key (unsealed). */
  readonly privateKeyPkcs8Der: Uint8Array;
  readonly spec: CaKeySpec;
}

/** `client` → clientAuth, `server` → serverAuth, `both` → both EKUs. */
export type X509Usage = "client" | "server" | "both";

/** What a leaf certificate contains; everything here has passed the issuance policy already. */
export interface IssueLeafParams {
  readonly csr: ParsedCsr;
  readonly subject: { readonly commonName: string; readonly organization?: string };
  readonly sans: SubjectAltNames;
  readonly usage: X509Usage;
  readonly notBefore: Date;
  /** Must not be later than the CA certificate's notAfter. */
  readonly notAfter: Date;
  /** Random bytes (16 recommended, at most 20); the top bit is cleared so the serial is positive. */
  readonly serialNumber: Uint8Array;
  /** Where relying parties fetch the CA's CRL: written as the CRL distribution point. */
  readonly crlUrl?: string;
}

/** Why a certificate was revoked, as CRL entries say it (RFC 5280 CRLReason). */
export type CrlReason =
  | "unspecified"
  | "key_compromise"
  | "affiliation_changed"
  | "superseded"
  | "cessation_of_operation"
  | "privilege_withdrawn";

/** What a CRL lists. */
export interface CrlParams {
  readonly entries: readonly {
    readonly serialHex: string;
    readonly revokedAt: Date;
    readonly reason: CrlReason;
  }[];
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  /** Increases with every CRL the CA signs (the cRLNumber extension). */
  readonly crlNumber: bigint;
}

const crlReasons: Readonly<Record<CrlReason, x509.X509CrlReason>> = {
  unspecified: x509.X509CrlReason.unspecified,
  key_compromise: x509.X509CrlReason.keyCompromise,
  affiliation_changed: x509.X509CrlReason.affiliationChanged,
  superseded: x509.X509CrlReason.superseded,
  cessation_of_operation: x509.X509CrlReason.cessationOfOperation,
  privilege_withdrawn: x509.X509CrlReason.privilegeWithdrawn,
};

/** An issued leaf certificate. */
export interface IssuedLeafCertificate {
  readonly pem: string;
  /** Lower-case hex of the minimal serial bytes. */
  readonly serialHex: string;
  /** Validity as encoded (whole seconds). */
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** A CA certificate and key loaded once, issuing any number of leaves. */
export interface X509LeafSigner {
  readonly spec: CaKeySpec;
  readonly caCertificatePem: string;
  issue(params: IssueLeafParams): Promise<IssuedLeafCertificate>;
  /** Signs a CRL; returns its DER. */
  signCrl(params: CrlParams): Promise<Uint8Array>;
}

const ekuByUsage: Readonly<Record<X509Usage, readonly string[]>> = {
  client: [x509.ExtendedKeyUsage.clientAuth],
  server: [x509.ExtendedKeyUsage.serverAuth],
  both: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
};

function sanList(sans: SubjectAltNames): x509.JsonGeneralNames {
  return [
    ...sans.dns.map((value) => ({ type: "dns" as const, value })),
    ...sans.ip.map((value) => ({ type: "ip" as const, value })),
    ...sans.email.map((value) => ({ type: "email" as const, value })),
    ...sans.uri.map((value) => ({ type: "url" as const, value })),
  ];
}

/**
 * Loads a CA for leaf issuance: parses its certificate, checks that the private key belongs to
 * it, and imports the key into WebCrypto once.
 *
 * @throws {TypeError} when the certificate or key cannot be read or do not belong together.
 *
 * @example
 * const signer = await createX509LeafSigner({ certificatePem, privateKeyPkcs8Der, spec });
 * const leaf = await signer.issue({ csr: parseCsr(pem), subject: { commonName: "alice" }, ... });
 */
export async function createX509LeafSigner(ca: X509LeafCa): Promise<X509LeafSigner> {
  return x509LeafSignerOf(ca.certificatePem, softwareSigningKey(ca.privateKeyPkcs8Der, ca.spec));
}

/**
 * A leaf signer over any CA signing key (software or in a PKCS#11 token): parses the CA
 * certificate and checks that the key belongs to it.
 *
 * @throws {TypeError} when the certificate cannot be read or the key does not belong to it.
 */
export async function x509LeafSignerOf(certificatePem: string, key: CaSigningKey): Promise<X509LeafSigner> {
  const caCert = new x509.X509Certificate(certificatePem);
  const certKey = createPublicKey({
    key: Buffer.from(caCert.publicKey.rawData),
    format: "der",
    type: "spki",
  });
  const caKey = createPublicKey({ key: Buffer.from(key.publicKeySpkiDer), format: "der", type: "spki" });
  if (!caKey.equals(certKey)) {
    throw new TypeError("the CA private key does not belong to the CA certificate");
  }
  const { crypto: signingCrypto, signingKey, signingAlgorithm } = x509SigningOf(key);
  // The AKI must repeat the CA's own SKI byte for byte, or chain building by key id fails.
  const caSki =
    caCert.getExtension(x509.SubjectKeyIdentifierExtension) ??
    (await x509.SubjectKeyIdentifierExtension.create(caCert.publicKey, false, crypto));
  const caNotAfter = caCert.notAfter.getTime();
  const rsaLeafUsage = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;

  return {
    spec: key.spec,
    caCertificatePem: certificatePem,
    async issue(params) {
      const { csr, subject, notBefore, notAfter } = params;
      if (subject.commonName === "") throw new TypeError("subject.commonName must not be empty");
      if (!(notBefore.getTime() < notAfter.getTime()))
        throw new RangeError("notBefore must be before notAfter");
      if (notAfter.getTime() > caNotAfter)
        throw new RangeError("notAfter must not be later than the CA's notAfter");
      const serialHex = toHex(positiveSerial(params.serialNumber));

      const name: x509.JsonNameParams = [];
      if (subject.organization !== undefined && subject.organization !== "") {
        name.push({ O: [{ utf8String: subject.organization }] });
      }
      name.push({ CN: [{ utf8String: subject.commonName }] });

      const extensions: x509.Extension[] = [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          csr.publicKey.keyType === "rsa" ? rsaLeafUsage : x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        new x509.ExtendedKeyUsageExtension([...ekuByUsage[params.usage]], false),
        await x509.SubjectKeyIdentifierExtension.create(csr.publicKey.spkiDer, false, crypto),
        new x509.AuthorityKeyIdentifierExtension(caSki.keyId, false),
      ];
      const names = sanList(params.sans);
      if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
      if (params.crlUrl !== undefined)
        extensions.push(new x509.CRLDistributionPointsExtension([params.crlUrl]));

      const cert = await x509.X509CertificateGenerator.create(
        {
          serialNumber: serialHex,
          subject: new x509.Name(name),
          issuer: caCert.subjectName,
          notBefore,
          notAfter,
          publicKey: csr.publicKey.spkiDer,
          signingKey,
          signingAlgorithm,
          extensions,
        },
        signingCrypto,
      );
      return { pem: cert.toString("pem"), serialHex, notBefore: cert.notBefore, notAfter: cert.notAfter };
    },
    async signCrl(params) {
      const crl = await x509.X509CrlGenerator.create(
        {
          issuer: caCert.subjectName,
          thisUpdate: params.thisUpdate,
          nextUpdate: params.nextUpdate,
          signingKey,
          signingAlgorithm,
          extensions: [
            new x509.AuthorityKeyIdentifierExtension(caSki.keyId, false),
            new x509.Extension(
              "2.5.29.20",
              false,
              AsnIntegerBigIntConverter.toASN(params.crlNumber).toBER(false),
            ),
          ],
          entries: params.entries.map((entry) => ({
            serialNumber: entry.serialHex,
            revocationDate: entry.revokedAt,
            reason: crlReasons[entry.reason],
          })),
        },
        signingCrypto,
      );
      return new Uint8Array(crl.rawData);
    },
  };
}

/**
 * Issues one leaf certificate. For more than one leaf per CA, use {@link createX509LeafSigner}:
 * this imports the CA key on every call.
 *
 * @example
 * const leaf = await issueLeafCertificate({ ca, csr: parseCsr(pem), subject, sans, usage: "client", ... });
 */
export async function issueLeafCertificate(
  params: IssueLeafParams & { readonly ca: X509LeafCa },
): Promise<IssuedLeafCertificate> {
  return (await createX509LeafSigner(params.ca)).issue(params);
}

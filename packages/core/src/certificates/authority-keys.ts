import { generateKeyPair } from "../crypto/generate-key.js";
import { type CaKeyType, KeySpecError, keyBitsOf, resolveKeySpec } from "../crypto/key-types.js";
import { sshPublicKeyLine } from "../crypto/ssh/public-key.js";
import { createCaCertificate } from "../crypto/x509/ca-certificate.js";
import { InvalidArgumentError } from "../errors.js";
import { toPem } from "../lib/pem.js";
import type { Random } from "../runtime.js";
import type { AuthorityKind, KeyAlgorithm } from "../storage/records.js";

/** The public half of a new authority key and its sealed-to-be private half. */
export interface AuthorityKeyMaterial {
  readonly keyBits: number;
  readonly privateKeyPkcs8Der: Uint8Array;
  readonly certificate: string;
  readonly publicKey: string;
  readonly serialNumber: string;
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/**
 * The key store context a private key is sealed under: bound to the authority and its key
 * version, so a sealed key copied into another row, or back over a newer version, does not open.
 * Version 1 keeps the context of the first release.
 */
export function caKeyContext(caId: string, keyVersion: number): string {
  return keyVersion === 1 ? `ca:${caId}` : `ca:${caId}:v${keyVersion}`;
}

const apiKeyType: Record<KeyAlgorithm, CaKeyType> = { rsa: "RSA", ecdsa: "ECDSA", ed25519: "ED25519" };

/** Checks the key type and size before any work is done; throws invalid_argument. */
export function checkKeySpec(algorithm: KeyAlgorithm, keyBits: number | undefined) {
  try {
    return resolveKeySpec(apiKeyType[algorithm], keyBits);
  } catch (error) {
    if (error instanceof KeySpecError) {
      throw new InvalidArgumentError(`invalid request: keyBits: ${error.reason}`, {
        violations: [{ field: "keyBits", description: error.reason }],
      });
    }
    throw error;
  }
}

/**
 * Generates an authority key (on the thread pool, never the event loop) and, for X.509, the
 * self-signed CA certificate that carries it.
 */
export async function createAuthorityKey(params: {
  kind: AuthorityKind;
  algorithm: KeyAlgorithm;
  keyBits: number | undefined;
  name: string;
  notBefore: Date;
  lifetimeSeconds: number;
  random: Random;
}): Promise<AuthorityKeyMaterial> {
  const spec = checkKeySpec(params.algorithm, params.keyBits);
  const key = await generateKeyPair(spec);
  const notAfter = new Date(params.notBefore.getTime() + params.lifetimeSeconds * 1000);
  if (params.kind === "ssh") {
    return {
      keyBits: keyBitsOf(spec),
      privateKeyPkcs8Der: key.privateKeyPkcs8Der,
      certificate: "",
      publicKey: sshPublicKeyLine(key.publicKeySpkiDer),
      serialNumber: "",
      subject: params.name,
      notBefore: params.notBefore,
      notAfter,
    };
  }
  const certificate = await createCaCertificate({
    key,
    subject: { commonName: params.name, organization: "Workspace Access Platform" },
    notBefore: params.notBefore,
    notAfter,
    serialNumber: params.random.bytes(16),
  });
  return {
    keyBits: keyBitsOf(spec),
    privateKeyPkcs8Der: key.privateKeyPkcs8Der,
    certificate: certificate.pem,
    publicKey: toPem("PUBLIC KEY", key.publicKeySpkiDer),
    serialNumber: certificate.serialHex,
    subject: certificate.subject,
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
  };
}

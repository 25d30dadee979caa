import { sshPublicKeyLine } from "@wap/ssh-wire";
import { type CaKeyType, KeySpecError, keyBitsOf, resolveKeySpec } from "../crypto/key-types.js";
import { createCaCertificate } from "../crypto/x509/ca-certificate.js";
import { InvalidArgumentError } from "../errors.js";
import { toPem } from "../lib/pem.js";
import type { Random } from "../runtime.js";
import type {
  AuthorityKind,
  CertificateAuthorityRecord,
  KeyAlgorithm,
  RetiredAuthorityKeyRecord,
} from "../storage/certificate-authorities.js";
import type { AuthorityKeyStorage } from "./key-storage.js";
import { keyAlgorithmFromWire } from "./messages.js";

/** The public half of a new authority key and what the authority row stores of its private half. */
export interface AuthorityKeyMaterial {
  readonly keyBits: number;
  /** Software keys: the sealed PKCS#8 key. PKCS#11 keys: the URI of the key object in the token. */
  readonly sealedPrivateKey: Uint8Array;
  readonly certificate: string;
  readonly publicKey: string;
  readonly serialNumber: string;
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
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
 * The type and size of an authority's next key (rollover, rotation): the requested type, or the
 * current one when none (0) is given; the requested size, or the current size when the type stays
 * the same, or the type's default. Checked as `checkKeySpec` does.
 */
export function nextKeySpec(
  current: Pick<CertificateAuthorityRecord, "keyType" | "keyBits">,
  requested: { readonly keyType?: number | undefined; readonly keyBits?: number | undefined },
): { algorithm: KeyAlgorithm; keyBits: number | undefined } {
  const algorithm: KeyAlgorithm =
    requested.keyType === undefined || requested.keyType === 0
      ? current.keyType
      : (keyAlgorithmFromWire.get(requested.keyType) as KeyAlgorithm);
  const keyBits =
    requested.keyBits !== undefined && requested.keyBits !== 0
      ? requested.keyBits
      : algorithm === current.keyType
        ? current.keyBits
        : undefined;
  checkKeySpec(algorithm, keyBits);
  return { algorithm, keyBits };
}

/**
 * Generates key version `keyVersion` of authority `caId` where `storage` keeps keys (software keys
 * on the thread pool, never the event loop; PKCS#11 keys inside the token) and, for X.509, the
 * self-signed CA certificate that carries it.
 */
export async function createAuthorityKey(params: {
  storage: AuthorityKeyStorage;
  caId: string;
  keyVersion: number;
  kind: AuthorityKind;
  algorithm: KeyAlgorithm;
  keyBits: number | undefined;
  name: string;
  notBefore: Date;
  lifetimeSeconds: number;
  random: Random;
}): Promise<AuthorityKeyMaterial> {
  const spec = checkKeySpec(params.algorithm, params.keyBits);
  const { stored, key } = await params.storage.generate(params.caId, params.keyVersion, spec);
  const notAfter = new Date(params.notBefore.getTime() + params.lifetimeSeconds * 1000);
  if (params.kind === "ssh") {
    return {
      keyBits: keyBitsOf(spec),
      sealedPrivateKey: stored,
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
    sealedPrivateKey: stored,
    certificate: certificate.pem,
    publicKey: toPem("PUBLIC KEY", key.publicKeySpkiDer),
    serialNumber: certificate.serialHex,
    subject: certificate.subject,
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
  };
}

/** The retired-key entry of `ca`'s current key, retired at `retiredAt` and trusted until `trustedUntil`. */
export function retiredKeyOf(
  ca: CertificateAuthorityRecord,
  retiredAt: Date,
  trustedUntil: Date,
): RetiredAuthorityKeyRecord {
  return {
    workspaceId: ca.workspaceId,
    caId: ca.id,
    version: ca.keyVersion,
    keyType: ca.keyType,
    keyBits: ca.keyBits,
    publicKey: ca.publicKey,
    certificate: ca.certificate,
    serialNumber: ca.serialNumber,
    notBefore: ca.notBefore,
    notAfter: ca.notAfter,
    createdAt: ca.notBefore,
    retiredAt,
    trustedUntil,
  };
}

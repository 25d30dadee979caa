/**
 * Signers kept ready per authority key: the sealed private key is opened and parsed (or the key
 * object found in the PKCS#11 token) once per authority and key version, not per request. A rollover makes a new version, so a new signer;
 * a staged rotation signs with two versions at once, so both are kept.
 *
 * The cache is made once per platform (`services.state.signers`): two platforms in one process
 * never serve each other's signers.
 *
 * @module
 */
import type { CaSigningKey } from "../../crypto/ca-signing-key.js";
import { type SshCertificateSigner, sshCertificateSignerOf } from "../../crypto/ssh/certificate.js";
import { type X509LeafSigner, x509LeafSignerOf } from "../../crypto/x509/leaf-certificate.js";
import type { Services } from "../../operations/services.js";
import type { CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import { checkKeySpec } from "../authority-keys.js";
import { keyStorageOf } from "../key-storage.js";

type KeyServices = Pick<Services, "keyStore" | "pkcs11Token" | "state">;

const MAX_AUTHORITIES = 1024;

/** Per authority, its signers by key version: a staged rotation signs with two versions at once. */
type Cache<T> = Map<string, Map<number, Promise<T>>>;

/** The signers of one platform, by kind of authority. */
export interface SignerCaches {
  readonly ssh: Cache<SshCertificateSigner>;
  readonly x509: Cache<X509LeafSigner>;
}

export function createSignerCaches(): SignerCaches {
  return { ssh: new Map(), x509: new Map() };
}

function cached<T>(
  cache: Cache<T>,
  services: KeyServices,
  ca: CertificateAuthorityRecord,
  make: (key: CaSigningKey) => T | Promise<T>,
): Promise<T> {
  let versions = cache.get(ca.id);
  const hit = versions?.get(ca.keyVersion);
  if (hit !== undefined) return hit;
  // Requests racing on a cold authority share one unsealing.
  const signer = (async () => {
    const spec = checkKeySpec(ca.keyType, ca.keyBits);
    return make(await keyStorageOf(services, ca.keyStorage).open(ca, spec));
  })();
  if (versions === undefined) {
    if (cache.size >= MAX_AUTHORITIES) cache.delete(cache.keys().next().value as string);
    versions = new Map();
    cache.set(ca.id, versions);
  }
  const mine = versions;
  // Keys two versions behind signed their last certificate: drop them.
  for (const version of mine.keys()) if (version < ca.keyVersion - 1) mine.delete(version);
  mine.set(ca.keyVersion, signer);
  // A key that fails to open (wrong master key, token without it) is tried again by the next request.
  signer.catch(() => {
    if (mine.get(ca.keyVersion) === signer) mine.delete(ca.keyVersion);
  });
  return signer;
}

/** The SSH signer of the authority's current key. */
export function sshSignerFor(
  services: KeyServices,
  ca: CertificateAuthorityRecord,
): Promise<SshCertificateSigner> {
  return cached(services.state.signers.ssh, services, ca, sshCertificateSignerOf);
}

/** The X.509 leaf signer of the authority's current key and certificate. */
export function x509SignerFor(
  services: KeyServices,
  ca: CertificateAuthorityRecord,
): Promise<X509LeafSigner> {
  return cached(services.state.signers.x509, services, ca, (key) => x509LeafSignerOf(ca.certificate, key));
}

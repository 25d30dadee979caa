/**
 * Signers kept ready per authority key: the sealed private key is opened and parsed once per
 * authority and key version, not per request. A rollover makes a new version, so a new signer;
 * a staged rotation signs with two versions at once, so both are kept.
 *
 * The cache belongs to the key store that opened the keys (one per platform instance).
 *
 * @module
 */
import type { KeyStore } from "../../crypto/key-store.js";
import { createSshCertificateSigner, type SshCertificateSigner } from "../../crypto/ssh/certificate.js";
import { createX509LeafSigner, type X509LeafSigner } from "../../crypto/x509/leaf-certificate.js";
import type { CertificateAuthorityRecord } from "../../storage/records.js";
import { caKeyContext, checkKeySpec } from "../authority-keys.js";

const MAX_AUTHORITIES = 1024;

/** Per authority, its signers by key version: a staged rotation signs with two versions at once. */
type Cache<T> = Map<string, Map<number, Promise<T>>>;

const sshCaches = new WeakMap<KeyStore, Cache<SshCertificateSigner>>();
const x509Caches = new WeakMap<KeyStore, Cache<X509LeafSigner>>();

function cached<T>(
  caches: WeakMap<KeyStore, Cache<T>>,
  keyStore: KeyStore,
  ca: CertificateAuthorityRecord,
  make: (privateKeyPkcs8Der: Uint8Array) => T | Promise<T>,
): Promise<T> {
  let cache = caches.get(keyStore);
  if (cache === undefined) {
    cache = new Map();
    caches.set(keyStore, cache);
  }
  let versions = cache.get(ca.id);
  const hit = versions?.get(ca.keyVersion);
  if (hit !== undefined) return hit;
  // Requests racing on a cold authority share one unsealing.
  const signer = (async () => {
    const pkcs8 = await keyStore.open(ca.sealedPrivateKey, caKeyContext(ca.id, ca.keyVersion));
    try {
      return await make(pkcs8);
    } finally {
      pkcs8.fill(0);
    }
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
  // A key that fails to open (wrong master key) is tried again by the next request.
  signer.catch(() => {
    if (mine.get(ca.keyVersion) === signer) mine.delete(ca.keyVersion);
  });
  return signer;
}

/** The SSH signer of the authority's current key. */
export function sshSignerFor(
  keyStore: KeyStore,
  ca: CertificateAuthorityRecord,
): Promise<SshCertificateSigner> {
  return cached(sshCaches, keyStore, ca, (pkcs8) =>
    createSshCertificateSigner(pkcs8, checkKeySpec(ca.keyType, ca.keyBits)),
  );
}

/** The X.509 leaf signer of the authority's current key and certificate. */
export function x509SignerFor(keyStore: KeyStore, ca: CertificateAuthorityRecord): Promise<X509LeafSigner> {
  return cached(x509Caches, keyStore, ca, (pkcs8) =>
    createX509LeafSigner({
      certificatePem: ca.certificate,
      privateKeyPkcs8Der: pkcs8,
      spec: checkKeySpec(ca.keyType, ca.keyBits),
    }),
  );
}

/**
 * Signers kept ready per authority key: the sealed private key is opened and parsed once per
 * authority and key version, not per request. A rollover makes a new version, so a new signer;
 * the old one is dropped on first sight of the new version.
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

interface Entry<T> {
  readonly version: number;
  readonly signer: Promise<T>;
}

type Cache<T> = Map<string, Entry<T>>;

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
  const hit = cache.get(ca.id);
  if (hit !== undefined && hit.version === ca.keyVersion) return hit.signer;
  // Requests racing on a cold authority share one unsealing.
  const signer = (async () => {
    const pkcs8 = await keyStore.open(ca.sealedPrivateKey, caKeyContext(ca.id, ca.keyVersion));
    try {
      return await make(pkcs8);
    } finally {
      pkcs8.fill(0);
    }
  })();
  const entry: Entry<T> = { version: ca.keyVersion, signer };
  const map = cache;
  // A key that fails to open (wrong master key) is tried again by the next request.
  signer.catch(() => {
    if (map.get(ca.id) === entry) map.delete(ca.id);
  });
  map.delete(ca.id);
  if (map.size >= MAX_AUTHORITIES) map.delete(map.keys().next().value as string);
  map.set(ca.id, entry);
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

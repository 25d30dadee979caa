/**
 * Which keys relying parties must trust for an authority: its current key, and every key retired
 * by a rollover until the last certificate that key signed has expired.
 *
 * SSH: the text is one authorized_keys line per key, the signing key first (the
 * daemon writes it as is to the file its sshd reads TrustedUserCAKeys from, and checks the host
 * certificate against the first line). Before any rollover it is exactly `publicKey`.
 *
 * @module
 */
import type { Services } from "../../operations/services.js";
import type {
  AuthorityKeyRecord,
  CertificateAuthorityRecord,
  RetiredAuthorityKeyRecord,
} from "../../storage/certificate-authorities.js";
import type { Repositories } from "../../storage/storage.js";

interface Entry {
  readonly version: number;
  readonly retired: Promise<readonly RetiredAuthorityKeyRecord[]>;
}

/**
 * The retired keys of a platform's authorities, by authority id. They change only with an
 * authority's key version (the rollover that retires a key writes it in the same transaction that
 * moves the version), so they are cached per version.
 */
export type RetiredKeyCache = Map<string, Entry>;

export function createRetiredKeyCache(): RetiredKeyCache {
  return new Map();
}

const MAX_AUTHORITIES = 1024;

/** The keys `ca` retired, newest first (none before its first rollover). */
export function retiredKeysOf(
  services: Pick<Services, "state">,
  storage: Repositories,
  ca: CertificateAuthorityRecord,
): Promise<readonly RetiredAuthorityKeyRecord[]> {
  if (ca.keyVersion === 1) return Promise.resolve([]);
  const cache = services.state.retiredKeys;
  const hit = cache.get(ca.id);
  if (hit !== undefined && hit.version === ca.keyVersion) return hit.retired;
  const retired = storage.retiredAuthorityKeys.list(ca.workspaceId, ca.id);
  const entry = { version: ca.keyVersion, retired };
  retired.catch(() => {
    if (cache.get(ca.id) === entry) cache.delete(ca.id);
  });
  cache.delete(ca.id);
  if (cache.size >= MAX_AUTHORITIES) cache.delete(cache.keys().next().value as string);
  cache.set(ca.id, entry);
  return retired;
}

/** The retired keys still to be trusted at `now`. */
export function stillTrusted(
  retired: readonly RetiredAuthorityKeyRecord[],
  now: Date,
): RetiredAuthorityKeyRecord[] {
  return retired.filter((key) => key.trustedUntil.getTime() > now.getTime());
}

/** The keys relying parties trust during a rotation (rotation.ts), the host certificates' signer first. */
function rotationKeys(ca: CertificateAuthorityRecord): AuthorityKeyRecord[] {
  if (ca.nextKey === null || ca.rotationPhase === "none") return [ca];
  return ca.rotationPhase === "host_signing" ? [ca.nextKey, ca] : [ca, ca.nextKey];
}

/** Why a key is trusted: the authority's key, a staged rotation's incoming key, or a retired one. */
export type TrustedKeyRole = "current" | "next" | "retired";

/** A key relying parties must trust now, with why, until when, and what it signs. */
export interface TrustedAuthorityKey {
  readonly role: TrustedKeyRole;
  /** authorized_keys line (SSH) or SPKI PEM (X.509). */
  readonly publicKey: string;
  /** The CA certificate PEM (X.509); empty for SSH. */
  readonly certificate: string;
  /** A retired key: the expiry of the last certificate it signed; else the key's own end of validity. */
  readonly trustedUntil: Date;
  readonly signsUser: boolean;
  readonly signsHost: boolean;
}

/**
 * Every key relying parties must trust for `ca` at `now`, the signer of host certificates first:
 * both keys of a staged rotation, then the retired keys still trusted. The one list every
 * publication of an authority's trust is made from (GetCertificateAuthority's `trustedKeys`,
 * SignSSHCertificate's `caPublicKey`, the anonymous trust endpoints).
 */
export function trustedKeysOf(
  ca: CertificateAuthorityRecord,
  retired: readonly RetiredAuthorityKeyRecord[],
  now: Date,
): TrustedAuthorityKey[] {
  const next = ca.rotationPhase === "none" ? null : ca.nextKey;
  const nextSignsUser =
    next !== null && (ca.rotationPhase === "user_signing" || ca.rotationPhase === "host_signing");
  const nextSignsHost = next !== null && ca.rotationPhase === "host_signing";
  const live = rotationKeys(ca).map(
    (key): TrustedAuthorityKey =>
      key === ca
        ? {
            role: "current",
            publicKey: ca.publicKey,
            certificate: ca.certificate,
            trustedUntil: ca.notAfter,
            signsUser: !nextSignsUser,
            signsHost: !nextSignsHost,
          }
        : {
            role: "next",
            publicKey: key.publicKey,
            certificate: key.certificate,
            trustedUntil: key.notAfter,
            signsUser: nextSignsUser,
            signsHost: nextSignsHost,
          },
  );
  const old = stillTrusted(retired, now).map(
    (key): TrustedAuthorityKey => ({
      role: "retired",
      publicKey: key.publicKey,
      certificate: key.certificate,
      trustedUntil: key.trustedUntil,
      signsUser: false,
      signsHost: false,
    }),
  );
  return [...live, ...old];
}

/**
 * The authorized_keys lines to trust for an SSH authority at `now`, the signing key (of host
 * certificates, during a staged rotation) first; both keys of a rotation, then retired keys.
 */
export function sshTrustedKeysText(
  ca: CertificateAuthorityRecord,
  retired: readonly RetiredAuthorityKeyRecord[],
  now: Date,
): string {
  return trustedKeysOf(ca, retired, now)
    .map((key) => key.publicKey)
    .join("\n");
}

/** The CA certificates to trust for an X.509 authority at `now` (PEM, the current one first). */
export function x509TrustBundle(
  ca: CertificateAuthorityRecord,
  retired: readonly RetiredAuthorityKeyRecord[],
  now: Date,
): string {
  return trustedKeysOf(ca, retired, now)
    .map((key) => key.certificate)
    .map((pem) => (pem.endsWith("\n") ? pem : `${pem}\n`))
    .join("");
}

import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AuthorityType,
  type CertificateAuthoritySchema,
  CertificateKeyType,
  KeyStorage,
  RotationPhase,
  TrustedKeyRole,
} from "@wap/api";
import type { Services } from "../operations/services.js";
import type {
  AuthorityKind,
  CertificateAuthorityRecord,
  KeyAlgorithm,
  KeyStorageKind,
  RetiredAuthorityKeyRecord,
  RotationPhase as RotationPhaseName,
} from "../storage/certificate-authorities.js";
import type { Repositories } from "../storage/storage.js";
import { retiredKeysOf, type TrustedKeyRole as TrustedKeyRoleName, trustedKeysOf } from "./issuance/trust.js";

export const keyAlgorithmToWire: Record<KeyAlgorithm, CertificateKeyType> = {
  rsa: CertificateKeyType.RSA,
  ecdsa: CertificateKeyType.ECDSA,
  ed25519: CertificateKeyType.ED25519,
};
export const keyAlgorithmFromWire = new Map<number, KeyAlgorithm>(
  Object.entries(keyAlgorithmToWire).map(([name, value]) => [value, name as KeyAlgorithm]),
);
export const authorityKindToWire: Record<AuthorityKind, AuthorityType> = {
  ssh: AuthorityType.SSH,
  x509: AuthorityType.X509,
};

export const keyStorageToWire: Record<KeyStorageKind, KeyStorage> = {
  software: KeyStorage.SOFTWARE,
  pkcs11: KeyStorage.PKCS11,
};
export const rotationPhaseToWire: Record<RotationPhaseName, RotationPhase> = {
  none: RotationPhase.UNSPECIFIED,
  published: RotationPhase.PUBLISHED,
  user_signing: RotationPhase.USER_SIGNING,
  host_signing: RotationPhase.HOST_SIGNING,
};

const trustedKeyRoleToWire: Record<TrustedKeyRoleName, TrustedKeyRole> = {
  current: TrustedKeyRole.CURRENT,
  next: TrustedKeyRole.NEXT,
  retired: TrustedKeyRole.RETIRED,
};

const seconds = (value: number) => durationFromMs(Math.round(value * 1000));

/** The public URL of an X.509 authority's CRL (anonymous GET, DER). */
export function crlUrlOf(services: Pick<Services, "config">, caId: string): string {
  return `${services.config.publicBaseUrl.replace(/\/+$/, "")}/v1/crl/${caId}.crl`;
}

/** Where an authority's trust lines are published (anonymous GET, see publication.ts). */
export function trustUrlOf(services: Pick<Services, "config">, caId: string): string {
  return `${services.config.publicBaseUrl.replace(/\/+$/, "")}/v1/trust/${caId}`;
}

/** The API's view of a certificate authority, with every key it asks relying parties to trust. */
export async function authorityMessage(
  services: Pick<Services, "config" | "clock" | "state">,
  storage: Repositories,
  ca: CertificateAuthorityRecord,
): Promise<MessageInitShape<typeof CertificateAuthoritySchema>> {
  return toCertificateAuthorityMessage(ca, services, await retiredKeysOf(services, storage, ca));
}

/** The API's view of a certificate authority. The private key never leaves storage. */
function toCertificateAuthorityMessage(
  ca: CertificateAuthorityRecord,
  services: Pick<Services, "config" | "clock">,
  retired: readonly RetiredAuthorityKeyRecord[],
): MessageInitShape<typeof CertificateAuthoritySchema> {
  return {
    id: ca.id,
    workspaceId: ca.workspaceId,
    name: ca.name,
    description: ca.description,
    certificate: ca.certificate,
    publicKey: ca.publicKey,
    serialNumber: ca.serialNumber,
    subject: ca.subject,
    notBefore: timestampFromDate(ca.notBefore),
    notAfter: timestampFromDate(ca.notAfter),
    isActive: ca.isActive,
    isDefault: ca.isDefault,
    keyBits: ca.keyBits,
    keyType: keyAlgorithmToWire[ca.keyType],
    allowedKeyTypes: ca.allowedKeyTypes.map((type) => keyAlgorithmToWire[type]),
    lifetime: seconds(ca.lifetimeSeconds),
    userDefaultTtl: seconds(ca.userDefaultTtlSeconds),
    userMaxTtl: seconds(ca.userMaxTtlSeconds),
    userExtensions: { ...ca.userExtensions },
    userCriticalOptions: { ...ca.userCriticalOptions },
    hostDefaultTtl: seconds(ca.hostDefaultTtlSeconds),
    hostMaxTtl: seconds(ca.hostMaxTtlSeconds),
    createdAt: timestampFromDate(ca.createdAt),
    updatedAt: timestampFromDate(ca.updatedAt),
    authorityType: authorityKindToWire[ca.authorityType],
    rotationPhase: rotationPhaseToWire[ca.rotationPhase],
    nextPublicKey: ca.nextKey?.publicKey ?? "",
    nextCertificate: ca.nextKey?.certificate ?? "",
    keyStorage: keyStorageToWire[ca.keyStorage],
    crlUrl: ca.authorityType === "x509" ? crlUrlOf(services, ca.id) : "",
    trustedKeys: trustedKeysOf(ca, retired, services.clock.now()).map((key) => ({
      role: trustedKeyRoleToWire[key.role],
      publicKey: key.publicKey,
      certificate: key.certificate,
      trustedUntil: timestampFromDate(key.trustedUntil),
      signsUserCertificates: key.signsUser,
      signsHostCertificates: key.signsHost,
    })),
    trustUrl: trustUrlOf(services, ca.id),
  };
}

import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AuthorityType,
  type CertificateAuthoritySchema,
  CertificateKeyType,
  KeyStorage,
  RotationPhase,
} from "@wap/api";
import type { Services } from "../operations/services.js";
import type {
  AuthorityKind,
  CertificateAuthorityRecord,
  KeyAlgorithm,
  KeyStorageKind,
  RotationPhase as RotationPhaseName,
} from "../storage/certificate-authorities.js";

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

const seconds = (value: number) => durationFromMs(Math.round(value * 1000));

/** The public URL of an X.509 authority's CRL (anonymous GET, DER). */
export function crlUrlOf(services: Pick<Services, "config">, caId: string): string {
  return `${services.config.publicBaseUrl.replace(/\/+$/, "")}/v1/crl/${caId}.crl`;
}

/** The API's view of a certificate authority. The private key never leaves storage. */
export function toCertificateAuthorityMessage(
  ca: CertificateAuthorityRecord,
  services: Pick<Services, "config">,
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
  };
}

import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AuthorityType, type CertificateAuthoritySchema, CertificateKeyType } from "@wap/api";
import type { AuthorityKind, CertificateAuthorityRecord, KeyAlgorithm } from "../storage/records.js";

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

const seconds = (value: number) => durationFromMs(Math.round(value * 1000));

/** The API's view of a certificate authority. The private key never leaves storage. */
export function toCertificateAuthorityMessage(
  ca: CertificateAuthorityRecord,
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
  };
}

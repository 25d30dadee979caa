/**
 * The records core keeps in storage. Times are `Date`s, durations are seconds, maps and lists
 * are plain objects and arrays; adapters decide how to lay them out in tables.
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";

export interface UserRecord {
  readonly id: string;
  readonly name: string;
  readonly username: string;
  /** Stored lower-cased; unique. */
  readonly email: string;
  readonly emailVerified: boolean;
  readonly picture: string;
  /** argon2id PHC string, or null for accounts that sign in another way. */
  readonly passwordHash: string | null;
  readonly enableEmailRecovery: boolean;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** One sign-in: the family of refresh tokens issued from one Login. Revoking it signs out. */
export interface AuthSessionRecord {
  readonly id: string;
  readonly userId: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly revokedAt: Date | null;
  readonly ipAddress: string;
  readonly userAgent: string;
}

/** A refresh token, kept only as a hash. Each is used once, then rotated. */
export interface RefreshTokenRecord {
  readonly id: string;
  readonly sessionId: string;
  /** SHA-256 of the token, hex. */
  readonly tokenHash: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly rotatedAt: Date | null;
}

export interface WorkspaceRecord {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly createdBy: string;
  readonly enrollAutoApprove: boolean;
  readonly enrollExpiresAt: Date | null;
  readonly inviteExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface MemberRecord {
  readonly workspaceId: string;
  readonly userId: string;
  readonly role: WorkspaceRole;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export type AuthorityKind = "ssh" | "x509";
export type KeyAlgorithm = "rsa" | "ecdsa" | "ed25519";
/** Where an authority's private key lives: sealed in the database, or inside a PKCS#11 token. */
export type KeyStorageKind = "software" | "pkcs11";
/**
 * Phase of a staged key rotation. `none`: the current key signs everything. `published`: the
 * next key is trusted, the current one still signs. `user_signing`: the next key signs user
 * (X.509: client) certificates. `host_signing`: the next key signs every certificate. Both keys are
 * trusted in every phase but `none`; retiring the old key ends the rotation.
 */
export type RotationPhase = "none" | "published" | "user_signing" | "host_signing";

/** One key of an authority: its public half, its certificate (X.509) and its private key handle. */
export interface AuthorityKeyRecord {
  readonly keyType: KeyAlgorithm;
  readonly keyBits: number;
  readonly certificate: string;
  readonly publicKey: string;
  readonly serialNumber: string;
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /**
   * Software keys: the PKCS#8 private key sealed by the key store. PKCS#11 keys: the UTF-8 label
   * of the key object in the token (the private key never leaves it).
   */
  readonly sealedPrivateKey: Uint8Array;
}

export interface CertificateAuthorityRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly name: string;
  readonly description: string;
  readonly authorityType: AuthorityKind;
  readonly keyType: KeyAlgorithm;
  readonly keyBits: number;
  /** PEM certificate (X.509 authorities); empty for SSH authorities. */
  readonly certificate: string;
  /** authorized_keys line (SSH) or SPKI PEM (X.509). */
  readonly publicKey: string;
  readonly serialNumber: string;
  readonly subject: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isActive: boolean;
  readonly isDefault: boolean;
  readonly allowedKeyTypes: readonly KeyAlgorithm[];
  readonly lifetimeSeconds: number;
  readonly userDefaultTtlSeconds: number;
  readonly userMaxTtlSeconds: number;
  readonly hostDefaultTtlSeconds: number;
  readonly hostMaxTtlSeconds: number;
  readonly userExtensions: Readonly<Record<string, string>>;
  readonly userCriticalOptions: Readonly<Record<string, string>>;
  /** The PKCS#8 private key, sealed by the key store with the CA id as context. */
  readonly sealedPrivateKey: Uint8Array;
  /** Starts at 1; rollover increments it. */
  readonly keyVersion: number;
  readonly keyStorage: KeyStorageKind;
  readonly rotationPhase: RotationPhase;
  /** The incoming key of a staged rotation (version `keyVersion + 1`); null outside one. */
  readonly nextKey: AuthorityKeyRecord | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/**
 * A key an authority used before a rollover. Only the public half is kept: nothing may be signed
 * with a retired key again, so its private half is destroyed when it is retired.
 */
export interface RetiredAuthorityKeyRecord {
  readonly workspaceId: string;
  readonly caId: string;
  /** The `keyVersion` the authority had while this key signed. */
  readonly version: number;
  readonly keyType: KeyAlgorithm;
  readonly keyBits: number;
  /** authorized_keys line (SSH) or SPKI PEM (X.509), as the authority carried it. */
  readonly publicKey: string;
  /** The CA certificate PEM (X.509); empty for SSH. */
  readonly certificate: string;
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** When this key became the signing key. */
  readonly createdAt: Date;
  /** When the rollover replaced it. */
  readonly retiredAt: Date;
  /**
   * Until when relying parties must keep trusting it: the expiry of the last certificate it can
   * have signed. Lists of trusted keys drop it afterwards.
   */
  readonly trustedUntil: Date;
}

/** A target: a machine reachable through the platform, trusting one SSH authority. */
export interface TargetRecord {
  readonly id: string;
  readonly workspaceId: string;
  /** The authority that signs the target's host certificate and that its sshd trusts for users. */
  readonly caId: string;
  /** The daemon serving the target, if one is enrolled for it. */
  readonly daemonId: string | null;
  /** Unique in the workspace. */
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** `host:port` or `host` strings, as daemons report them. */
  readonly endpoints: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export type IssuedCertificateKind = "ssh_user" | "ssh_host" | "x509";

export type RevocationReasonName =
  | "unspecified"
  | "key_compromise"
  | "affiliation_changed"
  | "superseded"
  | "cessation_of_operation"
  | "privilege_withdrawn";

/** One entry of the issuance ledger: a certificate the platform signed. Only revocation changes it. */
export interface IssuedCertificateRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly caId: string;
  /** The authority's `keyVersion` that signed it. */
  readonly caKeyVersion: number;
  readonly kind: IssuedCertificateKind;
  /**
   * Unique per authority. SSH: the uint64 serial in decimal, as `ssh-keygen -L` prints it.
   * X.509: lower-case hex of the serial's minimal bytes.
   */
  readonly serial: string;
  /** `SHA256:<base64>` of the subject's public key (SSH blob, or X.509 SubjectPublicKeyInfo). */
  readonly keyFingerprint: string;
  /** SSH principals; for X.509 the subject CN then the SANs as `DNS:`, `IP:`, `email:`, `URI:`. */
  readonly principals: readonly string[];
  readonly validAfter: Date;
  readonly validBefore: Date;
  /** `user`, `service_account` or `daemon`, and its id. */
  readonly requesterType: string;
  readonly requesterId: string;
  readonly targetId: string | null;
  /** The SSH key id, or the X.509 subject; identifies the request in sshd and TLS logs. */
  readonly keyId: string;
  readonly createdAt: Date;
  /** Set once, when the certificate is revoked; revocation is final. */
  readonly revokedAt?: Date | null;
  readonly revocationReason?: RevocationReasonName | null;
  /** `<actor type>:<actor id>` of who revoked it (`system:<action>` for revocations by a change of access). */
  readonly revokedBy?: string | null;
}

export type ServiceAccountRole = Extract<WorkspaceRole, "viewer" | "editor">;

export interface ServiceAccountRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly name: string;
  readonly description: string;
  readonly role: ServiceAccountRole;
  readonly tags: readonly string[];
  /** SHA-256, hex, of the whole PASETO token (of the hex secret part for a legacy `wapsa_` token). */
  readonly tokenHash: string;
  readonly expiresAt: Date | null;
  readonly lastUsedAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export type DaemonStatusValue = "pending" | "accepted" | "rejected";

export interface DaemonRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string | null;
  readonly name: string;
  readonly status: DaemonStatusValue;
  readonly recordSessions: boolean;
  readonly metadata: Readonly<Record<string, string>>;
  /** PEM SPKI of the key the daemon signs its requests with. */
  readonly authPublicKey: string;
  readonly authMethod: string;
  /** When a control stream was last seen open; null when offline. */
  readonly onlineSince: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface AuditEventRecord {
  readonly id: string;
  /** Null for events outside any workspace (sign-in, registration). */
  readonly workspaceId: string | null;
  readonly actorId: string;
  readonly actorType: string;
  /** `<service>.<method>`-style verb, e.g. `certificate_authority.create`. */
  readonly action: string;
  /** What the action touched, e.g. `certificate_authority:<id>`. */
  readonly resource: string;
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly statusCode: string;
  readonly requestId: string;
  readonly timestamp: Date;
}

/** A sealed server secret (e.g. the token signing key), shared by every instance. */
export interface SecretRecord {
  readonly name: string;
  readonly sealed: Uint8Array;
  readonly createdAt: Date;
}

/** Offset paging as the API defines it. */
export interface PageRequest {
  readonly limit: number;
  readonly offset: number;
}

/** One page of a list and the total number of matching rows. */
export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}

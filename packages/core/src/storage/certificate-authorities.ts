/**
 * Certificate authorities and the keys they retired (`certificate_authorities`,
 * `certificate_authority_keys`).
 *
 * @module
 */
import type { Patch } from "./common.js";

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

export interface CertificateAuthorityRepository {
  insert(ca: CertificateAuthorityRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<CertificateAuthorityRecord | null>;
  /** For the public CRL endpoint, before any workspace is known: the authority of this id anywhere. */
  findForPublication(id: string): Promise<CertificateAuthorityRecord | null>;
  /** All authorities of the workspace, oldest first. */
  list(workspaceId: string): Promise<CertificateAuthorityRecord[]>;
  /** The workspace's default authority of this kind, or `null` when it has none. */
  findDefault(workspaceId: string, kind: AuthorityKind): Promise<CertificateAuthorityRecord | null>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      CertificateAuthorityRecord,
      | "name"
      | "description"
      | "isActive"
      | "isDefault"
      | "allowedKeyTypes"
      | "lifetimeSeconds"
      | "userDefaultTtlSeconds"
      | "userMaxTtlSeconds"
      | "hostDefaultTtlSeconds"
      | "hostMaxTtlSeconds"
      | "userExtensions"
      | "userCriticalOptions"
    >,
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /**
   * Clears `isDefault` on every authority of this kind in the workspace. Call it inside the
   * transaction that sets a new default: adapters also enforce "at most one default per
   * workspace and kind" with a unique index, so a racing second default fails instead of
   * slipping through.
   */
  clearDefault(workspaceId: string, kind: AuthorityKind, updatedAt: Date): Promise<void>;
  /**
   * Replaces the signing key (rollover, or the end of a staged rotation): sets the key fields and
   * `keyVersion` to `expectedVersion + 1` and ends any rotation (phase `none`, no next key), only
   * if the stored `keyVersion` still is `expectedVersion`. Returns the updated authority, or
   * `null` when it does not exist or another rollover won the race.
   */
  replaceKey(
    workspaceId: string,
    id: string,
    expectedVersion: number,
    key: AuthorityKeyRecord,
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /**
   * Moves a staged rotation to `phase` with `nextKey`, only if the stored phase still is
   * `expectedPhase` and the key version `expectedVersion`; `null` otherwise (a racing move won, or
   * the authority is gone).
   */
  setRotation(
    workspaceId: string,
    id: string,
    expected: { readonly phase: RotationPhase; readonly keyVersion: number },
    next: { readonly phase: RotationPhase; readonly nextKey: AuthorityKeyRecord | null },
    updatedAt: Date,
  ): Promise<CertificateAuthorityRecord | null>;
  /** Deletes the authority and its retired keys. The issuance ledger keeps its entries. */
  delete(workspaceId: string, id: string): Promise<boolean>;
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

/** The keys authorities used before a rollover (public halves only). */
export interface RetiredAuthorityKeyRepository {
  /** Throws {@link UniqueViolationError} (`certificate_authority_keys.version`) for a version kept already. */
  insert(key: RetiredAuthorityKeyRecord): Promise<void>;
  /** The retired keys of one authority, newest version first. */
  list(workspaceId: string, caId: string): Promise<RetiredAuthorityKeyRecord[]>;
}

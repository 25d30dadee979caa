/**
 * Sealed server secrets, and every value sealed with the master key (`secrets`).
 *
 * @module
 */

/** A sealed server secret (e.g. the token signing key), shared by every instance. */
export interface SecretRecord {
  readonly name: string;
  readonly sealed: Uint8Array;
  readonly createdAt: Date;
}

export interface SecretRepository {
  find(name: string): Promise<SecretRecord | null>;
  /**
   * Stores the secret unless one of that name exists, and returns the stored one. When several
   * server instances start at once, they all end up with the same secret.
   */
  insertIfAbsent(secret: SecretRecord): Promise<SecretRecord>;
}

/** Where one sealed value lives: what the key store's context of it is made of. */
export type SealedValueRef =
  | { readonly kind: "ca_key"; readonly caId: string; readonly keyVersion: number }
  | { readonly kind: "secret"; readonly name: string }
  | { readonly kind: "oidc_client_secret"; readonly providerId: string; readonly workspaceId: string }
  | { readonly kind: "audit_key"; readonly workspaceId: string }
  | { readonly kind: "webhook_secret"; readonly endpointId: string; readonly version: number };

export interface SealedValue {
  readonly ref: SealedValueRef;
  readonly sealed: Uint8Array;
}

/**
 * Every value sealed with the master key, across all workspaces: for re-sealing them under a
 * new key (`wap-server rotate-master-key`), never for operations serving a request.
 */
export interface SealedValueRepository {
  /** Every sealed value: CA private keys, server secrets, OIDC client secrets, audit signing keys, webhook secrets. */
  listAll(): Promise<SealedValue[]>;
  /**
   * Replaces one sealed value. A CA key is replaced only while the authority still has that key
   * version. Returns false when the row (or that version) is gone.
   */
  replace(ref: SealedValueRef, sealed: Uint8Array): Promise<boolean>;
}

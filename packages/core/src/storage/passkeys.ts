/**
 * WebAuthn credentials (`passkeys`).
 *
 * @module
 */

/** A WebAuthn credential of a user. */
export interface PasskeyRecord {
  /** The credential id, base64url; unique across users. */
  readonly id: string;
  readonly userId: string;
  readonly name: string;
  /** COSE public key. */
  readonly publicKey: Uint8Array;
  /** The authenticator's signature counter (0 when it keeps none). */
  readonly counter: number;
  readonly transports: readonly string[];
  /** "singleDevice" or "multiDevice". */
  readonly deviceType: string;
  readonly backedUp: boolean;
  readonly createdAt: Date;
  readonly lastUsedAt: Date | null;
}

export interface PasskeyRepository {
  insert(passkey: PasskeyRecord): Promise<void>;
  /** By credential id, whoever owns it (sign-in starts without a user). */
  findById(id: string): Promise<PasskeyRecord | null>;
  /** Oldest first. */
  listByUser(userId: string): Promise<PasskeyRecord[]>;
  rename(userId: string, id: string, name: string): Promise<PasskeyRecord | null>;
  /** Stores the counter and time of a successful sign-in. */
  recordUse(id: string, counter: number, at: Date): Promise<void>;
  delete(userId: string, id: string): Promise<boolean>;
}

/**
 * CLI devices and the logins that bind them to a user (`user_devices`, `cli_logins`).
 *
 * @module
 */

/** A CLI device: the key it signs requests with, bound to a user by an approved login. */
export interface UserDeviceRecord {
  /** The device id the CLI generated (its `Platform-Client-Device-Id`). */
  readonly id: string;
  readonly userId: string;
  /** The login session the device acts in; revoking it signs the device out. */
  readonly sessionId: string;
  readonly name: string;
  /** "tpm" or "soft", as the client claimed it. */
  readonly authMethod: string;
  /** PEM SPKI of the device's P-256 key. */
  readonly publicKey: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly lastUsedAt: Date | null;
}

export interface UserDeviceRepository {
  insert(device: UserDeviceRecord): Promise<void>;
  /** By device id, whoever owns it (request authentication). */
  findById(id: string): Promise<UserDeviceRecord | null>;
  /** Oldest first. */
  listByUser(userId: string): Promise<UserDeviceRecord[]>;
  /** Deletes the device whoever owns it (a new login of the same device replaces it). */
  deleteById(id: string): Promise<UserDeviceRecord | null>;
  /** Deletes the user's device; false when the user has none of that id. */
  delete(userId: string, id: string): Promise<boolean>;
  touchLastUsed(id: string, at: Date): Promise<void>;
}

/** A CLI login waiting for a signed-in user to approve its code. */
export interface CliLoginRecord {
  readonly id: string;
  /** SHA-256 of the login code, hex; unique. */
  readonly codeHash: string;
  /** SHA-256 of the login code and the user code the CLI shows, hex (devices/cli-login.ts). */
  readonly userCodeHash: string;
  /** Wrong user codes entered so far; a few cancel the login. */
  readonly codeFailures: number;
  readonly deviceId: string;
  readonly deviceName: string;
  readonly authMethod: string;
  readonly publicKey: string;
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  /** The user who approved it; null while pending. */
  readonly approvedBy: string | null;
  readonly approvedAt: Date | null;
  /** When it was refused (by the user, or by too many wrong codes); null while pending. */
  readonly deniedAt: Date | null;
  /** The CLI's `Platform-Client-OS` and `Platform-Client-Version` headers ("" when absent). */
  readonly clientOs: string;
  readonly clientVersion: string;
}

export interface CliLoginRepository {
  insert(login: CliLoginRecord): Promise<void>;
  findById(id: string): Promise<CliLoginRecord | null>;
  /** The login with this code hash, whatever its state. */
  findByCode(codeHash: string): Promise<CliLoginRecord | null>;
  /** How many logins from `ipAddress` are pending at `at`. */
  countPendingFrom(ipAddress: string, at: Date): Promise<number>;
  /**
   * Approves the pending, unexpired login `id` for `userId`. Returns the approved record to
   * exactly one caller even when many race (with each other or with a refusal); null otherwise.
   */
  approve(id: string, userId: string, at: Date): Promise<CliLoginRecord | null>;
  /** Refuses the pending login `id`; the record, or null when it was already decided. */
  deny(id: string, at: Date): Promise<CliLoginRecord | null>;
  /** Counts one wrong user code against the login and returns the new count. */
  recordCodeFailure(id: string): Promise<number>;
  delete(id: string): Promise<void>;
  deleteExpired(before: Date): Promise<void>;
}

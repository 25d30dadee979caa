/**
 * The account half of the storage port: one-time tokens, passkeys, backup codes, CLI devices and
 * their pending logins, linked identities, sign-in throttles and request nonces. Part of
 * {@link Repositories}; kept in its own file because these tables move with the account features.
 *
 * @module
 */

/** What a one-time token is for; a token never works for another purpose. */
export type OneTimeTokenPurpose =
  | "verify_email"
  | "change_email"
  | "reset_password"
  | "passkey_registration"
  | "passkey_login";

/**
 * A single-use, expiring secret sent to a user (email links) or handed to a client (WebAuthn
 * challenges). Only its SHA-256 is stored.
 */
export interface OneTimeTokenRecord {
  readonly id: string;
  readonly purpose: OneTimeTokenPurpose;
  /** SHA-256 of the secret, hex; unique. */
  readonly tokenHash: string;
  /** Null for tokens issued before anyone is known (passkey sign-in challenges). */
  readonly userId: string | null;
  /** What the token carries, e.g. the address being verified. */
  readonly data: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly consumedAt: Date | null;
}

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

/** One backup code, kept only as a hash. */
export interface BackupCodeRecord {
  readonly id: string;
  readonly userId: string;
  /** SHA-256 of the normalised code, hex. */
  readonly codeHash: string;
  readonly createdAt: Date;
  readonly usedAt: Date | null;
}

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

/** An external identity (OAuth, OIDC or SAML) linked to a user. */
export interface LinkedAccountRecord {
  readonly userId: string;
  /** Provider name, e.g. "github"; one link per provider and user. */
  readonly provider: string;
  /** The user's id at the provider; unique per provider. */
  readonly providerId: string;
  readonly providerEmail: string;
  readonly providerUsername: string;
  /** "oauth", "oidc" or "saml". */
  readonly protocol: string;
  readonly createdAt: Date;
}

/** Failed sign-in attempts against one key (`account:<email>` or `ip:<address>`). */
export interface LoginThrottleRecord {
  readonly key: string;
  readonly failures: number;
  readonly lastFailureAt: Date;
  /** The failure before the last one; null after the first. */
  readonly previousFailureAt: Date | null;
}

export interface OneTimeTokenRepository {
  insert(token: OneTimeTokenRecord): Promise<void>;
  /**
   * Marks the unconsumed token of `purpose` with this hash consumed, if it has not expired at
   * `at`, and returns it. Returns the record to exactly one caller even when many race with the
   * same token; every other call (and every call for an unknown, expired or spent token) gets null.
   */
  consume(purpose: OneTimeTokenPurpose, tokenHash: string, at: Date): Promise<OneTimeTokenRecord | null>;
  /** The newest token of `purpose` issued to `userId`, whatever its state. */
  latestForUser(userId: string, purpose: OneTimeTokenPurpose): Promise<OneTimeTokenRecord | null>;
  /** Deletes the user's unconsumed tokens of `purpose` (a new one supersedes them). */
  deleteForUser(userId: string, purpose: OneTimeTokenPurpose): Promise<void>;
  /** Deletes tokens of `purpose` that expired before `before`. */
  deleteExpired(purpose: OneTimeTokenPurpose, before: Date): Promise<void>;
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

export interface BackupCodeRepository {
  insertMany(codes: readonly BackupCodeRecord[]): Promise<void>;
  /** Oldest first. */
  listByUser(userId: string): Promise<BackupCodeRecord[]>;
  /**
   * Marks the user's unused code with this hash used. Returns `true` for exactly one caller even
   * when many race with the same code.
   */
  consume(userId: string, codeHash: string, at: Date): Promise<boolean>;
  deleteForUser(userId: string): Promise<void>;
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

export interface LinkedAccountRepository {
  insert(account: LinkedAccountRecord): Promise<void>;
  /** Oldest first. */
  listByUser(userId: string): Promise<LinkedAccountRecord[]>;
  delete(userId: string, provider: string): Promise<boolean>;
}

export interface LoginThrottleRepository {
  find(key: string): Promise<LoginThrottleRecord | null>;
  /**
   * Counts one failure against `key` at `at` in one atomic step and returns the new state. When
   * the last failure is older than `forgetBefore`, counting starts again from one. Concurrent
   * calls each see their own count.
   */
  recordFailure(key: string, at: Date, forgetBefore: Date): Promise<LoginThrottleRecord>;
  clear(key: string): Promise<void>;
}

export interface RequestNonceRepository {
  /**
   * Records that `signer` used `nonce`, to be remembered until `expiresAt`. Returns `true` the
   * first time, and `false` to every later (or concurrent) claim of the same pair. Forgets nonces
   * that expired before `at` as it goes.
   */
  claim(signer: string, nonce: string, expiresAt: Date, at: Date): Promise<boolean>;
}

/** The account repositories, as {@link Repositories} holds them. */
export interface AccountRepositories {
  readonly oneTimeTokens: OneTimeTokenRepository;
  readonly passkeys: PasskeyRepository;
  readonly backupCodes: BackupCodeRepository;
  readonly userDevices: UserDeviceRepository;
  readonly cliLogins: CliLoginRepository;
  readonly linkedAccounts: LinkedAccountRepository;
  readonly loginThrottles: LoginThrottleRepository;
  readonly requestNonces: RequestNonceRepository;
}

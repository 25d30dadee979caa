/**
 * Single-use tokens sent to users or handed to clients (`one_time_tokens`).
 *
 * @module
 */

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

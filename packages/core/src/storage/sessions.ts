/**
 * Sign-in sessions and the refresh tokens issued in them (`auth_sessions`, `refresh_tokens`).
 *
 * @module
 */

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

export interface AuthSessionRepository {
  insert(session: AuthSessionRecord): Promise<void>;
  findById(id: string): Promise<AuthSessionRecord | null>;
  /** Marks the session revoked (idempotent); its refresh tokens and access tokens stop working. */
  revoke(id: string, at: Date): Promise<void>;
  /** The user's sessions that are neither revoked nor expired at `at`, oldest first. */
  listActiveForUser(userId: string, at: Date): Promise<AuthSessionRecord[]>;
  /** Revokes every live session of the user except `exceptId` (idempotent). */
  revokeAllForUser(userId: string, at: Date, exceptId?: string): Promise<void>;
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

export interface RefreshTokenRepository {
  insert(token: RefreshTokenRecord): Promise<void>;
  findByHash(tokenHash: string): Promise<RefreshTokenRecord | null>;
  /**
   * Marks an unrotated token as rotated. Returns `true` for exactly one caller even when many
   * race with the same token; every other call returns `false`.
   */
  markRotated(id: string, at: Date): Promise<boolean>;
}

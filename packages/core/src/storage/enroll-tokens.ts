/**
 * The workspace's daemon enrolment token (`daemon_enroll_tokens`).
 *
 * @module
 */

/** The workspace's one enrolment token. Only the SHA-256 of the token is kept. */
export interface EnrollTokenRecord {
  /** One token per workspace. */
  readonly workspaceId: string;
  /** SHA-256 of the token, hex; unique. */
  readonly tokenHash: string;
  /** Who minted it (`actorOf` id). */
  readonly createdBy: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface EnrollTokenRepository {
  /** Stores the token, replacing the workspace's previous one (which stops working). */
  replace(token: EnrollTokenRecord): Promise<void>;
  find(workspaceId: string): Promise<EnrollTokenRecord | null>;
  /** By token, across workspaces: the token is all a daemon has. Expired tokens are returned too. */
  findByTokenHash(tokenHash: string): Promise<EnrollTokenRecord | null>;
  delete(workspaceId: string): Promise<boolean>;
}

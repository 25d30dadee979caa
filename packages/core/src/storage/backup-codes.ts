/**
 * Backup codes, kept as hashes (`backup_codes`).
 *
 * @module
 */

/** One backup code, kept only as a hash. */
export interface BackupCodeRecord {
  readonly id: string;
  readonly userId: string;
  /** SHA-256 of the normalised code, hex. */
  readonly codeHash: string;
  readonly createdAt: Date;
  readonly usedAt: Date | null;
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

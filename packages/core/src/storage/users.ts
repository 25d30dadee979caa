/**
 * User accounts (`users`).
 *
 * @module
 */
import type { Patch } from "./common.js";

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

export interface UserRepository {
  insert(user: UserRecord): Promise<void>;
  findById(id: string): Promise<UserRecord | null>;
  /** Looks up by the lower-cased email. */
  findByEmail(email: string): Promise<UserRecord | null>;
  /** Looks up by username whatever its case: usernames are unique case-insensitively. */
  findByUsername(username: string): Promise<UserRecord | null>;
  update(
    id: string,
    patch: Patch<
      UserRecord,
      "name" | "username" | "email" | "emailVerified" | "picture" | "passwordHash" | "enableEmailRecovery"
    >,
    updatedAt: Date,
  ): Promise<UserRecord | null>;
  /** Deletes the user and, by cascade, their memberships, sessions, credentials and devices. */
  delete(id: string): Promise<boolean>;
}

/**
 * The users repository (`users`).
 *
 * @module
 */
import type { Repositories, UserRecord, UserRepository } from "@wap/core/storage";
import { type Insertable, type Selectable, sql, type Updateable } from "kysely";
import { fromDate, fromFlag, toDate, toFlag } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { UsersTable } from "../schema.js";

function userToRow(u: UserRecord): Insertable<UsersTable> {
  return {
    id: u.id,
    name: u.name,
    username: u.username,
    email: u.email,
    email_verified: toFlag(u.emailVerified),
    picture: u.picture,
    password_hash: u.passwordHash,
    enable_email_recovery: toFlag(u.enableEmailRecovery),
    created_at: fromDate(u.createdAt),
    updated_at: fromDate(u.updatedAt),
  };
}

function rowToUser(r: Selectable<UsersTable>): UserRecord {
  return {
    id: r.id,
    name: r.name,
    username: r.username,
    email: r.email,
    emailVerified: fromFlag(r.email_verified),
    picture: r.picture,
    passwordHash: r.password_hash,
    enableEmailRecovery: fromFlag(r.enable_email_recovery),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

type UserPatch = Parameters<Repositories["users"]["update"]>[1];

export function createUserRepository(run: QueryRunner): UserRepository {
  return {
    async insert(user) {
      await run.write((db) => db.insertInto("users").values(userToRow(user)).execute());
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToUser(row) : null;
    },
    async findByEmail(email) {
      // Emails are stored lower-cased; lower-case the lookup too so callers cannot miss by case.
      const row = await run.read((db) =>
        db.selectFrom("users").selectAll().where("email", "=", email.toLowerCase()).executeTakeFirst(),
      );
      return row ? rowToUser(row) : null;
    },
    async findByUsername(username) {
      // Usernames are unique whatever their case (users_username_lower_key).
      const row = await run.read((db) =>
        db
          .selectFrom("users")
          .selectAll()
          .where(sql`lower(username)`, "=", username.toLowerCase())
          .executeTakeFirst(),
      );
      return row ? rowToUser(row) : null;
    },
    async update(id, patch: UserPatch, updatedAt) {
      const set: Updateable<UsersTable> = { updated_at: fromDate(updatedAt) };
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.username !== undefined) set.username = patch.username;
      if (patch.email !== undefined) set.email = patch.email.toLowerCase();
      if (patch.emailVerified !== undefined) set.email_verified = toFlag(patch.emailVerified);
      if (patch.picture !== undefined) set.picture = patch.picture;
      if (patch.passwordHash !== undefined) set.password_hash = patch.passwordHash;
      if (patch.enableEmailRecovery !== undefined)
        set.enable_email_recovery = toFlag(patch.enableEmailRecovery);
      const row = await run.write((db) =>
        db.updateTable("users").set(set).where("id", "=", id).returningAll().executeTakeFirst(),
      );
      return row ? rowToUser(row) : null;
    },
    async delete(id) {
      // Foreign keys cascade to memberships, sessions, credentials, devices and tokens.
      const result = await run.write((db) => db.deleteFrom("users").where("id", "=", id).executeTakeFirst());
      return result.numDeletedRows > 0n;
    },
  };
}

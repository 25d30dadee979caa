/**
 * The queries of the account repositories (and the account methods of users, sessions and
 * members), written once for both dialects. Every "exactly once" of the port is one conditional
 * statement, so the database picks the single winner.
 *
 * @module
 */
import type { AccountRepositories, Repositories } from "@wap/core/storage";
import { sql, type Updateable } from "kysely";
import { fromDate, rowToSession, rowToUser, toFlag } from "./lib/mapping.js";
import {
  backupCodeToRow,
  cliLoginToRow,
  linkedAccountToRow,
  oneTimeTokenToRow,
  passkeyToRow,
  rowToBackupCode,
  rowToCliLogin,
  rowToLinkedAccount,
  rowToLoginThrottle,
  rowToOneTimeToken,
  rowToPasskey,
  rowToUserDevice,
  userDeviceToRow,
} from "./lib/mapping-accounts.js";
import type { QueryRunner } from "./repositories.js";
import type { UsersTable } from "./schema.js";

type UserPatch = Parameters<Repositories["users"]["update"]>[1];

/** The account methods of `users`. */
export function userAccountQueries(run: QueryRunner): Pick<Repositories["users"], "update" | "delete"> {
  return {
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

/** The account methods of `authSessions`. */
export function sessionAccountQueries(
  run: QueryRunner,
): Pick<Repositories["authSessions"], "listActiveForUser" | "revokeAllForUser"> {
  return {
    async listActiveForUser(userId, at) {
      const rows = await run.read((db) =>
        db
          .selectFrom("auth_sessions")
          .selectAll()
          .where("user_id", "=", userId)
          .where("revoked_at", "is", null)
          .where("expires_at", ">", fromDate(at))
          .orderBy("created_at")
          .orderBy("id")
          .execute(),
      );
      return rows.map(rowToSession);
    },
    async revokeAllForUser(userId, at, exceptId) {
      await run.write((db) => {
        let query = db
          .updateTable("auth_sessions")
          .set({ revoked_at: fromDate(at) })
          .where("user_id", "=", userId)
          .where("revoked_at", "is", null);
        if (exceptId !== undefined) query = query.where("id", "<>", exceptId);
        return query.execute();
      });
    },
  };
}

/** The account methods of `members`. */
export function memberAccountQueries(run: QueryRunner): Pick<Repositories["members"], "listSoleOwnerships"> {
  return {
    async listSoleOwnerships(userId) {
      const rows = await run.read((db) =>
        db
          .selectFrom("workspace_members as m")
          .select("m.workspace_id")
          .where("m.user_id", "=", userId)
          .where("m.role", "=", "owner")
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom("workspace_members as o")
                  .select("o.user_id")
                  .whereRef("o.workspace_id", "=", "m.workspace_id")
                  .where("o.role", "=", "owner")
                  .whereRef("o.user_id", "<>", "m.user_id"),
              ),
            ),
          )
          .orderBy("m.workspace_id")
          .execute(),
      );
      return rows.map((r) => r.workspace_id);
    },
  };
}

/** The account repositories. */
export function createAccountRepositories(run: QueryRunner): AccountRepositories {
  return {
    oneTimeTokens: {
      async insert(token) {
        await run.write((db) => db.insertInto("one_time_tokens").values(oneTimeTokenToRow(token)).execute());
      },
      async consume(purpose, tokenHash, at) {
        const row = await run.write((db) =>
          db
            .updateTable("one_time_tokens")
            .set({ consumed_at: fromDate(at) })
            .where("purpose", "=", purpose)
            .where("token_hash", "=", tokenHash)
            .where("consumed_at", "is", null)
            .where("expires_at", ">", fromDate(at))
            .returningAll()
            .executeTakeFirst(),
        );
        return row ? rowToOneTimeToken(row) : null;
      },
      async latestForUser(userId, purpose) {
        const row = await run.read((db) =>
          db
            .selectFrom("one_time_tokens")
            .selectAll()
            .where("user_id", "=", userId)
            .where("purpose", "=", purpose)
            .orderBy("created_at", "desc")
            .orderBy("id", "desc")
            .limit(1)
            .executeTakeFirst(),
        );
        return row ? rowToOneTimeToken(row) : null;
      },
      async deleteForUser(userId, purpose) {
        await run.write((db) =>
          db
            .deleteFrom("one_time_tokens")
            .where("user_id", "=", userId)
            .where("purpose", "=", purpose)
            .where("consumed_at", "is", null)
            .execute(),
        );
      },
      async deleteExpired(purpose, before) {
        await run.write((db) =>
          db
            .deleteFrom("one_time_tokens")
            .where("purpose", "=", purpose)
            .where("expires_at", "<", fromDate(before))
            .execute(),
        );
      },
    },

    passkeys: {
      async insert(passkey) {
        await run.write((db) => db.insertInto("passkeys").values(passkeyToRow(passkey)).execute());
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("passkeys").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToPasskey(row) : null;
      },
      async listByUser(userId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("passkeys")
            .selectAll()
            .where("user_id", "=", userId)
            .orderBy("created_at")
            .orderBy("id")
            .execute(),
        );
        return rows.map(rowToPasskey);
      },
      async rename(userId, id, name) {
        const row = await run.write((db) =>
          db
            .updateTable("passkeys")
            .set({ name })
            .where("user_id", "=", userId)
            .where("id", "=", id)
            .returningAll()
            .executeTakeFirst(),
        );
        return row ? rowToPasskey(row) : null;
      },
      async recordUse(id, counter, at) {
        await run.write((db) =>
          db
            .updateTable("passkeys")
            .set({ counter, last_used_at: fromDate(at) })
            .where("id", "=", id)
            .execute(),
        );
      },
      async delete(userId, id) {
        const result = await run.write((db) =>
          db.deleteFrom("passkeys").where("user_id", "=", userId).where("id", "=", id).executeTakeFirst(),
        );
        return result.numDeletedRows > 0n;
      },
    },

    backupCodes: {
      async insertMany(codes) {
        if (codes.length === 0) return;
        await run.write((db) => db.insertInto("backup_codes").values(codes.map(backupCodeToRow)).execute());
      },
      async listByUser(userId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("backup_codes")
            .selectAll()
            .where("user_id", "=", userId)
            .orderBy("created_at")
            .orderBy("id")
            .execute(),
        );
        return rows.map(rowToBackupCode);
      },
      async consume(userId, codeHash, at) {
        const result = await run.write((db) =>
          db
            .updateTable("backup_codes")
            .set({ used_at: fromDate(at) })
            .where("user_id", "=", userId)
            .where("code_hash", "=", codeHash)
            .where("used_at", "is", null)
            .executeTakeFirst(),
        );
        return result.numUpdatedRows > 0n;
      },
      async deleteForUser(userId) {
        await run.write((db) => db.deleteFrom("backup_codes").where("user_id", "=", userId).execute());
      },
    },

    userDevices: {
      async insert(device) {
        await run.write((db) => db.insertInto("user_devices").values(userDeviceToRow(device)).execute());
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("user_devices").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToUserDevice(row) : null;
      },
      async listByUser(userId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("user_devices")
            .selectAll()
            .where("user_id", "=", userId)
            .orderBy("created_at")
            .orderBy("id")
            .execute(),
        );
        return rows.map(rowToUserDevice);
      },
      async deleteById(id) {
        const row = await run.write((db) =>
          db.deleteFrom("user_devices").where("id", "=", id).returningAll().executeTakeFirst(),
        );
        return row ? rowToUserDevice(row) : null;
      },
      async delete(userId, id) {
        const result = await run.write((db) =>
          db.deleteFrom("user_devices").where("user_id", "=", userId).where("id", "=", id).executeTakeFirst(),
        );
        return result.numDeletedRows > 0n;
      },
      async touchLastUsed(id, at) {
        await run.write((db) =>
          db
            .updateTable("user_devices")
            .set({ last_used_at: fromDate(at) })
            .where("id", "=", id)
            .execute(),
        );
      },
    },

    cliLogins: {
      async insert(login) {
        await run.write((db) => db.insertInto("cli_logins").values(cliLoginToRow(login)).execute());
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("cli_logins").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToCliLogin(row) : null;
      },
      async findByCode(codeHash) {
        const row = await run.read((db) =>
          db.selectFrom("cli_logins").selectAll().where("code_hash", "=", codeHash).executeTakeFirst(),
        );
        return row ? rowToCliLogin(row) : null;
      },
      async countPendingFrom(ipAddress, at) {
        const row = await run.read((db) =>
          db
            .selectFrom("cli_logins")
            .select((eb) => eb.fn.countAll<string | number>().as("n"))
            .where("ip_address", "=", ipAddress)
            .where("expires_at", ">", fromDate(at))
            .where("approved_at", "is", null)
            .where("denied_at", "is", null)
            .executeTakeFirstOrThrow(),
        );
        return Number(row.n);
      },
      async approve(id, userId, at) {
        const row = await run.write((db) =>
          db
            .updateTable("cli_logins")
            .set({ approved_by: userId, approved_at: fromDate(at) })
            .where("id", "=", id)
            .where("approved_at", "is", null)
            .where("denied_at", "is", null)
            .where("expires_at", ">", fromDate(at))
            .returningAll()
            .executeTakeFirst(),
        );
        return row ? rowToCliLogin(row) : null;
      },
      async deny(id, at) {
        const row = await run.write((db) =>
          db
            .updateTable("cli_logins")
            .set({ denied_at: fromDate(at) })
            .where("id", "=", id)
            .where("approved_at", "is", null)
            .where("denied_at", "is", null)
            .returningAll()
            .executeTakeFirst(),
        );
        return row ? rowToCliLogin(row) : null;
      },
      async recordCodeFailure(id) {
        const row = await run.write((db) =>
          db
            .updateTable("cli_logins")
            .set((eb) => ({ code_failures: eb("code_failures", "+", 1) }))
            .where("id", "=", id)
            .returning("code_failures")
            .executeTakeFirst(),
        );
        return row ? Number(row.code_failures) : 0;
      },
      async delete(id) {
        await run.write((db) => db.deleteFrom("cli_logins").where("id", "=", id).execute());
      },
      async deleteExpired(before) {
        await run.write((db) =>
          db.deleteFrom("cli_logins").where("expires_at", "<", fromDate(before)).execute(),
        );
      },
    },

    linkedAccounts: {
      async insert(account) {
        await run.write((db) =>
          db.insertInto("linked_accounts").values(linkedAccountToRow(account)).execute(),
        );
      },
      async listByUser(userId) {
        const rows = await run.read((db) =>
          db
            .selectFrom("linked_accounts")
            .selectAll()
            .where("user_id", "=", userId)
            .orderBy("created_at")
            .orderBy("provider")
            .execute(),
        );
        return rows.map(rowToLinkedAccount);
      },
      async delete(userId, provider) {
        const result = await run.write((db) =>
          db
            .deleteFrom("linked_accounts")
            .where("user_id", "=", userId)
            .where("provider", "=", provider)
            .executeTakeFirst(),
        );
        return result.numDeletedRows > 0n;
      },
    },

    loginThrottles: {
      async find(key) {
        const row = await run.read((db) =>
          db.selectFrom("login_throttles").selectAll().where("key", "=", key).executeTakeFirst(),
        );
        return row ? rowToLoginThrottle(row) : null;
      },
      async recordFailure(key, at, forgetBefore) {
        // One upsert: SET expressions read the row as it was, on both engines, so concurrent
        // failures each add one.
        const last = sql.ref("login_throttles.last_failure_at");
        const stale = sql<boolean>`${last} < ${fromDate(forgetBefore)}`;
        const row = await run.write((db) =>
          db
            .insertInto("login_throttles")
            .values({ key, failures: 1, last_failure_at: fromDate(at), previous_failure_at: null })
            .onConflict((oc) =>
              oc.column("key").doUpdateSet({
                failures: sql<number>`case when ${stale} then 1 else ${sql.ref("login_throttles.failures")} + 1 end`,
                previous_failure_at: sql<number | null>`case when ${stale} then null else ${last} end`,
                last_failure_at: fromDate(at),
              }),
            )
            .returningAll()
            .executeTakeFirstOrThrow(),
        );
        return rowToLoginThrottle(row);
      },
      async clear(key) {
        await run.write((db) => db.deleteFrom("login_throttles").where("key", "=", key).execute());
      },
    },

    requestNonces: {
      async claim(signer, nonce, expiresAt, at) {
        const inserted = await run.write(async (db) => {
          await db.deleteFrom("request_nonces").where("expires_at", "<", fromDate(at)).execute();
          return db
            .insertInto("request_nonces")
            .values({ signer, nonce, expires_at: fromDate(expiresAt) })
            .onConflict((oc) => oc.columns(["signer", "nonce"]).doNothing())
            .executeTakeFirst();
        });
        return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
      },
    },
  };
}

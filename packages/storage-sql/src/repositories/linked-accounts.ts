/**
 * Linked external identities (`linked_accounts`).
 *
 * @module
 */
import type { LinkedAccountRecord, LinkedAccountRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, toDate } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { LinkedAccountsTable } from "../schema-accounts.js";

export function rowToLinkedAccount(r: Selectable<LinkedAccountsTable>): LinkedAccountRecord {
  return {
    userId: r.user_id,
    provider: r.provider,
    providerId: r.provider_id,
    providerEmail: r.provider_email,
    providerUsername: r.provider_username,
    protocol: r.protocol,
    createdAt: toDate(r.created_at),
  };
}

function linkedAccountToRow(a: LinkedAccountRecord): Insertable<LinkedAccountsTable> {
  return {
    user_id: a.userId,
    provider: a.provider,
    provider_id: a.providerId,
    provider_email: a.providerEmail,
    provider_username: a.providerUsername,
    protocol: a.protocol,
    created_at: fromDate(a.createdAt),
  };
}

export function createLinkedAccountRepository(run: QueryRunner): LinkedAccountRepository {
  return {
    async insert(account) {
      await run.write((db) => db.insertInto("linked_accounts").values(linkedAccountToRow(account)).execute());
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
  };
}

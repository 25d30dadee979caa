/**
 * Single-use tokens (`one_time_tokens`). Consuming one is a single conditional statement, so the
 * database picks the one winner.
 *
 * @module
 */
import type { OneTimeTokenPurpose, OneTimeTokenRecord, OneTimeTokenRepository } from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull, toJson, toStringMap } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { OneTimeTokensTable } from "../schema-accounts.js";

function rowToOneTimeToken(r: Selectable<OneTimeTokensTable>): OneTimeTokenRecord {
  return {
    id: r.id,
    purpose: r.purpose as OneTimeTokenPurpose,
    tokenHash: r.token_hash,
    userId: r.user_id,
    data: toStringMap(r.data),
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    consumedAt: toDateOrNull(r.consumed_at),
  };
}

function oneTimeTokenToRow(t: OneTimeTokenRecord): Insertable<OneTimeTokensTable> {
  return {
    id: t.id,
    purpose: t.purpose,
    token_hash: t.tokenHash,
    user_id: t.userId,
    data: toJson(t.data),
    created_at: fromDate(t.createdAt),
    expires_at: fromDate(t.expiresAt),
    consumed_at: fromDateOrNull(t.consumedAt),
  };
}

export function createOneTimeTokenRepository(run: QueryRunner): OneTimeTokenRepository {
  return {
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
  };
}

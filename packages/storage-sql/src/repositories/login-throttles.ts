/**
 * Failed sign-in counters (`login_throttles`).
 *
 * @module
 */
import type { LoginThrottleRecord, LoginThrottleRepository } from "@wap/core/storage";
import { type Selectable, sql } from "kysely";
import { fromDate, toDate, toDateOrNull, toNumber } from "../lib/mapping.js";
import type { QueryRunner } from "../repositories.js";
import type { LoginThrottlesTable } from "../schema-accounts.js";

function rowToLoginThrottle(r: Selectable<LoginThrottlesTable>): LoginThrottleRecord {
  return {
    key: r.key,
    failures: toNumber(r.failures),
    lastFailureAt: toDate(r.last_failure_at),
    previousFailureAt: toDateOrNull(r.previous_failure_at),
  };
}

export function createLoginThrottleRepository(run: QueryRunner): LoginThrottleRepository {
  return {
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
  };
}

/**
 * Rate limits shared by every instance over one PostgreSQL: rate-limiter-flexible's Postgres
 * store counts each principal's requests in one row, with an atomic upsert, so a budget is
 * spent across all instances rather than once per instance.
 *
 * The counters live in the library's own table, created by the library once at start-up (it
 * knows its schema). It is not part of our migrations: nothing else reads it, and losing it only
 * resets the windows.
 *
 * @module
 */
import type { PostgresConnectionPool } from "@wap/storage-postgres";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import { type RateLimiters, type RateLimitSettings, rateLimiterFrom, unlimited } from "./rate-limit.js";

/** The counters' table, in the schema the connection's search_path names. */
export const rateLimitTable = "wap_rate_limits";

/** Limiters over the pool; creates the counters' table first if it is missing. */
export async function createPostgresRateLimiters(
  pool: PostgresConnectionPool,
  settings: RateLimitSettings,
): Promise<RateLimiters> {
  await createCounterTable(pool);
  const build = (points: number, keyPrefix: string) =>
    points > 0
      ? rateLimiterFrom(
          new RateLimiterPostgres({
            storeClient: pool,
            storeType: "pool",
            tableName: rateLimitTable,
            // Created above: without this, every limiter would run CREATE TABLE again.
            tableCreated: true,
            points,
            duration: settings.windowSeconds,
            keyPrefix,
          }),
        )
      : unlimited;
  return {
    authenticated: build(settings.authenticatedPoints, "auth"),
    anonymous: build(settings.anonymousPoints, "anon"),
  };
}

/**
 * Creates the counters' table. Instances starting at the same moment race in PostgreSQL's own
 * `CREATE TABLE IF NOT EXISTS` (the loser sees "type … already exists"): by then the table is
 * there, so one more try finds it.
 */
async function createCounterTable(pool: PostgresConnectionPool): Promise<void> {
  try {
    await createCounterTableOnce(pool);
  } catch (error) {
    if (!isDuplicateObject(error)) throw error;
    await createCounterTableOnce(pool);
  }
}

/** unique_violation (on pg_type), duplicate_table, duplicate_object. */
function isDuplicateObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "23505" || code === "42P07" || code === "42710";
}

/** The library creates its table when a limiter is built without `tableCreated`, and calls back. */
function createCounterTableOnce(pool: PostgresConnectionPool): Promise<void> {
  return new Promise((resolve, reject) => {
    new RateLimiterPostgres(
      {
        storeClient: pool,
        storeType: "pool",
        tableName: rateLimitTable,
        // This limiter is never used: no clean-up timer for it.
        clearExpiredByTimeout: false,
        points: 1,
        duration: 1,
      },
      (error) => (error ? reject(error) : resolve()),
    );
  });
}

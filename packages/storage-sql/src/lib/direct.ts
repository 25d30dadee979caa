/**
 * Running a compiled query on the driver at once, without Kysely's executor (connection
 * provider, mutex, plugins: several promises and some tens of microseconds per query). An adapter
 * whose driver is synchronous (better-sqlite3) registers a direct executor for its Kysely
 * instance; prepared queries (lib/prepared.ts) use it when the adapter says the connection is
 * free, and Kysely's executor otherwise.
 *
 * @module
 */
import type { CompiledQuery, Kysely, QueryResult } from "kysely";
import type { Database } from "../schema.js";

/**
 * Runs `query` now and returns its result, or returns undefined when it must not run now (a
 * transaction holds the connection: the query would join it). Throws the driver's errors.
 */
export type DirectExecutor = (query: CompiledQuery) => QueryResult<unknown> | undefined;

const executors = new WeakMap<Kysely<Database>, DirectExecutor>();

/** Registers the direct executor of `db` (its root instance, not a transaction's). */
export function registerDirectExecutor(db: Kysely<Database>, executor: DirectExecutor): void {
  executors.set(db, executor);
}

/** Runs `query` on `db`, directly when its adapter allows it now. */
export function executeQuery<Row>(db: Kysely<Database>, query: CompiledQuery): Promise<QueryResult<Row>> {
  const direct = executors.get(db);
  if (direct !== undefined) {
    try {
      const result = direct(query);
      if (result !== undefined) return Promise.resolve(result as QueryResult<Row>);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return db.executeQuery<Row>(query);
}

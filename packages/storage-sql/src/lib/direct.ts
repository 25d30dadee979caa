/**
 * Running a compiled query on the driver at once, without Kysely's executor (connection
 * provider, mutex, plugins: several promises and some tens of microseconds per query).
 *
 * The extension point is `SqlStorageOptions.directExecutor`: an adapter whose driver is
 * synchronous (better-sqlite3) passes one, and the storage hands `createQueryExecution`'s result
 * to its repositories through `QueryRunner.execute`, which prepared queries (lib/prepared.ts) run
 * on. A Kysely `Driver` cannot do this: every query Kysely executes passes its connection
 * provider and the driver's `acquireConnection` (promises, and the mutex of its SQLite driver)
 * before the driver sees it; skipping those is the point.
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

/** Runs a compiled query on `db` (the storage's own instance, or one of its transactions). */
export type ExecuteQuery = <Row>(db: Kysely<Database>, query: CompiledQuery) => Promise<QueryResult<Row>>;

/** Runs every query through Kysely's executor. */
export const throughKysely: ExecuteQuery = <Row>(db: Kysely<Database>, query: CompiledQuery) =>
  db.executeQuery<Row>(query);

/**
 * How the storage over `root` runs compiled queries: directly when the adapter gave a direct
 * executor, the query is on `root` itself (a transaction's queries go through Kysely) and the
 * executor says the connection is free; through Kysely otherwise.
 */
export function createQueryExecution(
  root: Kysely<Database>,
  direct: DirectExecutor | undefined,
): ExecuteQuery {
  if (direct === undefined) return throughKysely;
  return <Row>(db: Kysely<Database>, query: CompiledQuery): Promise<QueryResult<Row>> => {
    if (db === root) {
      try {
        const result = direct(query);
        if (result !== undefined) return Promise.resolve(result as QueryResult<Row>);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return db.executeQuery<Row>(query);
  };
}

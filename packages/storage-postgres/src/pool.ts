/**
 * The connection pool of one server instance. The storage borrows it, and so can anything else
 * that must share state through PostgreSQL (the rate-limit store), so that an instance holds one
 * bounded set of connections.
 *
 * @module
 */
import pg from "pg";

export interface PostgresPoolOptions {
  readonly connectionString: string;
  /** Most connections open at once. Default 10. */
  readonly maxConnections?: number;
  /** How long a query waits for a free connection (or a new one) before failing. Default 10 s. */
  readonly connectionTimeoutMs?: number;
}

/** A `pg.Pool`, as the storage and the rate-limit store take it. */
export type PostgresConnectionPool = pg.Pool;

/** Creates a pool that reports an unreachable server as an error instead of waiting forever. */
export function createPostgresPool(options: PostgresPoolOptions): PostgresConnectionPool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    // Without a timeout a request waits forever for a dead server instead of failing.
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
  });
  // An idle client losing its connection emits "error" on the pool; unhandled, it kills the
  // process. The pool drops that client and the next query reports any outage.
  pool.on("error", () => undefined);
  return pool;
}

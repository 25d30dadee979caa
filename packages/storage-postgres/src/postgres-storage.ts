/**
 * The scale-out storage: any number of server instances over one PostgreSQL database.
 *
 * @module
 */
import type { Storage } from "@wap/core/storage";
import { createSqlStorage, type Database, migrateToLatest, translateDriverError } from "@wap/storage-sql";
import { Kysely, PostgresDialect, type PostgresPool, sql } from "kysely";
import type pg from "pg";
import { postgresTraits } from "./dialect.js";
import { createPostgresPool } from "./pool.js";

/** The few `pg.Pool` methods the adapter calls. */
export type PgPoolLike = PostgresPool;

export type PostgresStorageOptions =
  /**
   * A connection string; the storage creates the pool and ends it on `close()`. Put
   * `?options=-c search_path=<schema>` in it to use a schema other than `public`.
   */
  (
    | { readonly connectionString: string; readonly maxConnections?: number }
    /** A pool the application owns: `close()` leaves it open. */
    | { readonly pool: PgPoolLike }
  ) & {
    /**
     * Whether a call on the storage itself inside one of its transactions fails (the caller
     * meant `tx`) or joins the transaction. Default: joins it (test suites set it to fail).
     */
    readonly strictTransactions?: boolean;
  };

/** First key of the two-key advisory lock that serialises migrations (the second is the schema). */
const migrationLockClass = 0x77617073; // "waps"

/**
 * Connects to PostgreSQL and brings the schema up to date. Safe to call from many instances at
 * once: migrations run in one transaction under an advisory lock.
 *
 * @example
 * ```ts
 * const storage = await createPostgresStorage({ connectionString: process.env.DATABASE_URL! });
 * ```
 */
export async function createPostgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  let source: PostgresPool;
  let owned: pg.Pool | undefined;
  if ("connectionString" in options) {
    owned = createPostgresPool(options);
    source = owned;
  } else {
    source = options.pool;
  }
  const pool: PostgresPool = {
    connect: async () => guard(await source.connect()),
    // A lent pool belongs to the application.
    end: async () => {
      if (owned !== undefined) await owned.end();
    },
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });

  try {
    await migrate(db);
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw translateDriverError(postgresTraits, error);
  }
  return createSqlStorage({
    db,
    dialect: postgresTraits,
    capabilities: { multiInstance: true },
    ...(options.strictTransactions !== undefined && { strictTransactions: options.strictTransactions }),
  });
}

const guarded = new WeakSet<object>();

/**
 * A checked-out client whose server connection dies between two queries (a failover while a
 * transaction waits on the application) emits "error" with nobody listening, which would kill
 * the process. The failure still reaches the caller: the next query on that client rejects.
 */
function guard<C extends object>(client: C): C {
  const emitter = client as { on?: (event: string, listener: () => void) => unknown };
  if (!guarded.has(client) && typeof emitter.on === "function") {
    guarded.add(client);
    emitter.on("error", () => undefined);
  }
  return client;
}

async function migrate(db: Kysely<Database>): Promise<void> {
  await db.connection().execute(async (conn) => {
    const row = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(conn);
    const schema = row.rows[0]?.schema ?? null;
    if (schema === null) {
      throw new Error("storage-postgres: no current schema: the search_path names no existing schema");
    }
    // Held on this connection for the whole run, so concurrent starts take turns; per schema, so
    // databases holding several installations do not wait on each other.
    await sql`select pg_advisory_lock(${sql.lit(migrationLockClass)}, hashtext(${schema}))`.execute(conn);
    try {
      // Kysely's Migrator runs the pending migrations in one transaction on PostgreSQL.
      await migrateToLatest(conn as Kysely<unknown>, "postgres", { schema });
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(migrationLockClass)}, hashtext(${schema}))`.execute(conn);
    }
  });
}

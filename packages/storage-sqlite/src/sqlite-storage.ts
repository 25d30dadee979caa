/**
 * The embedded storage: one better-sqlite3 connection in WAL mode, and for a file of its own a
 * writer thread with a second connection that commits `append` batches off the event loop
 * (append-writer.ts).
 *
 * @module
 */
import { chainHash, type Storage } from "@wap/core/storage";
import { createSqlStorage, type Database, migrateToLatest, translateDriverError } from "@wap/storage-sql";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, type SqliteDatabase, SqliteDialect, sql } from "kysely";
import { type AppendWriter, createAppendWriter } from "./append-writer.js";
import { preparePrivateFiles } from "./database-files.js";
import { sqliteTraits } from "./dialect.js";
import { createReadCache, type ReadCache } from "./read-cache.js";

/** The few better-sqlite3 `Database` methods the adapter calls. */
export interface SqliteDatabaseLike extends SqliteDatabase {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /** True while a transaction is open on the connection. */
  readonly inTransaction: boolean;
  /** Registers an SQL function (the audit chain's hash). */
  function(name: string, options: { deterministic: boolean }, fn: (...args: never[]) => unknown): unknown;
}

export type SqliteStorageOptions =
  /** A file to open (created if missing), or ":memory:". The storage owns and closes it. */
  (
    | {
        readonly filename: string;
        readonly busyTimeoutMs?: number;
        /**
         * The caller makes sure no other connection writes the file while the storage is open
         * (the server holds a lock file for that). The rows every request reads are then kept in
         * memory and dropped at the storage's next write (read-cache.ts). Default false.
         */
        readonly exclusive?: boolean;
      }
    /**
     * A database the application opened. Its pragmas are set as the storage needs them; the
     * application keeps ownership: `close()` leaves it open.
     */
    | { readonly database: SqliteDatabaseLike; readonly busyTimeoutMs?: number }
  ) & {
    /**
     * Whether a call on the storage itself inside one of its transactions fails (the caller
     * meant `tx`) or joins the transaction. Default: joins it (test suites set it to fail).
     */
    readonly strictTransactions?: boolean;
  };

const defaultBusyTimeoutMs = 5000;

/**
 * Opens SQLite storage and brings its schema up to date.
 *
 * @example
 * ```ts
 * const storage = await createSqliteStorage({ filename: "/var/lib/wap/wap.db" });
 * ```
 */
export async function createSqliteStorage(options: SqliteStorageOptions): Promise<Storage> {
  const owned = "filename" in options;
  // A file of its own is private to the server's user (database-files.ts).
  const ownFile = owned && isReopenable(options.filename) ? options.filename : undefined;
  if (ownFile !== undefined) preparePrivateFiles(ownFile);
  const database: SqliteDatabaseLike = owned ? new BetterSqlite3(options.filename) : options.database;
  const busyTimeoutMs = Math.max(0, Math.trunc(options.busyTimeoutMs ?? defaultBusyTimeoutMs));
  try {
    configure(database, busyTimeoutMs);
  } catch (error) {
    if (owned) database.close();
    throw error;
  }

  const reads = owned && options.exclusive === true ? createReadCache() : undefined;
  const prepare = cachedStatements(database, reads);
  // Kysely closes the database on destroy(); a lent one must stay open.
  const forKysely: SqliteDatabase = {
    prepare,
    close: () => {
      if (owned) database.close();
    },
  };
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: forKysely }) });

  try {
    await migrate(db);
  } catch (error) {
    await db.destroy();
    throw translateDriverError(sqliteTraits, error);
  }
  // A second connection needs a file it can open again: not an in-memory or temporary database,
  // and not one the application lent (it did not ask for another connection to its file).
  const writer: AppendWriter | undefined =
    ownFile !== undefined ? createAppendWriter({ filename: ownFile, busyTimeoutMs }) : undefined;
  return createSqlStorage({
    db,
    dialect: sqliteTraits,
    capabilities: { multiInstance: false },
    ...(options.strictTransactions !== undefined && { strictTransactions: options.strictTransactions }),
    directExecutor: (query) => {
      // Inside an open transaction the statement would join it: Kysely's executor waits instead.
      if (database.inTransaction) return undefined;
      const statement = prepare(query.sql);
      if (statement.reader) {
        const read = () => statement.all(query.parameters) as unknown[];
        return { rows: reads ? reads.rows(query.sql, query.parameters, read) : read() };
      }
      const { changes, lastInsertRowid } = statement.run(query.parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    },
    ...(writer && { commitAppends: (units) => writer.commit(units), onClose: () => writer.close() }),
  });
}

function isReopenable(filename: string): boolean {
  return filename !== "" && filename !== ":memory:" && !filename.startsWith("file:");
}

/**
 * Kysely prepares every query anew (and the direct executor asks here too, so that the read cache
 * sees every statement); compiling SQL is a large share of a simple read. The queries
 * come from a fixed set of builders, so their texts repeat and their statements can be reused
 * (better-sqlite3 statements are synchronous, so one is never used by two queries at once).
 *
 * Kysely begins transactions with a deferred BEGIN. Another connection (the writer thread, another
 * process) committing between such a transaction's first read and its first write would fail that
 * write at once (SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out); BEGIN IMMEDIATE takes the
 * write lock first, waiting for it up to busy_timeout.
 */
function cachedStatements(
  database: SqliteDatabaseLike,
  reads: ReadCache | undefined,
  capacity = 512,
): SqliteDatabase["prepare"] {
  const statements = new Map<string, ReturnType<SqliteDatabase["prepare"]>>();
  return (source) => {
    // Every statement of this connection passes here just before it runs.
    reads?.observe(source);
    let statement = statements.get(source);
    if (statement === undefined) {
      statement = database.prepare(source === "begin" ? "begin immediate" : source);
      if (statements.size >= capacity) statements.delete(statements.keys().next().value as string);
      statements.set(source, statement);
    }
    return statement;
  };
}

function configure(database: SqliteDatabaseLike, busyTimeoutMs: number): void {
  // WAL lets readers of other processes (backups, sqlite3 CLI) work alongside the server.
  database.pragma("journal_mode = WAL");
  // NORMAL may lose the last commits on power loss in WAL mode; an acknowledged write must survive.
  database.pragma("synchronous = FULL");
  // Workspace deletion relies on ON DELETE CASCADE, which SQLite enforces only when asked.
  database.pragma("foreign_keys = ON");
  database.pragma(`busy_timeout = ${busyTimeoutMs}`);
  // The audit chain's SHA-256 step (the writer thread registers the same one).
  database.function(
    "wap_chain_hash",
    { deterministic: true },
    (previous: Uint8Array, position: number | bigint, content: Uint8Array) =>
      Buffer.from(chainHash(previous, Number(position), content)),
  );
  if (Number(database.pragma("foreign_keys", { simple: true })) !== 1) {
    throw new Error(
      "storage-sqlite: could not enable foreign_keys (is a transaction open on this database?)",
    );
  }
}

/**
 * Kysely does not wrap SQLite migrations in a transaction; we do, with BEGIN IMMEDIATE, so a crash
 * leaves the old schema intact and two processes opening one file never migrate it twice.
 */
async function migrate(db: Kysely<Database>): Promise<void> {
  await sql`begin immediate`.execute(db);
  try {
    await migrateToLatest(db as Kysely<unknown>, "sqlite");
    await sql`commit`.execute(db);
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => undefined);
    throw error;
  }
}

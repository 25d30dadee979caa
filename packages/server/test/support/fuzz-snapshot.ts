/**
 * A byte-for-byte picture of one workspace's rows (see tenant-rows.ts), read from the server's
 * SQLite file while it runs. Taken before and after fuzzing, the two must be equal.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Tenant, tenantRows } from "@wap/test-kit/tenant-rows";

export type { Tenant };

/** The few calls of better-sqlite3 used here. */
interface ReadOnlyDatabase {
  prepare(source: string): { all(): unknown[] };
  transaction<T>(fn: () => T): () => T;
  close(): void;
}

/**
 * Opens the file read-only with the embedded storage's own driver (WAL: the running server keeps
 * writing while this reads).
 */
export function openReadOnly(file: string): ReadOnlyDatabase {
  const storagePackage = join(import.meta.dirname, "../../../storage-sqlite/package.json");
  const BetterSqlite3 = createRequire(storagePackage)("better-sqlite3") as new (
    file: string,
    options: { readonly: boolean; fileMustExist: boolean },
  ) => ReadOnlyDatabase;
  return new BetterSqlite3(file, { readonly: true, fileMustExist: true });
}

/** Every row of `tenant`, per table, as sorted JSON lines. */
export function snapshotOf(database: ReadOnlyDatabase, tenant: Tenant): Record<string, string[]> {
  return database.transaction(() => tenantRows(database, tenant))();
}

/**
 * The files of an embedded database: private to the server's user, and used by one process at
 * a time.
 *
 * - `wap.db`, `wap.db-wal` and `wap.db-shm` are mode 0600. The database file is created so
 *   before SQLite opens it (SQLite gives the WAL and shared-memory files the mode of the
 *   database file), and files an older version left readable are narrowed before use.
 * - `<database>.lock` ({@link lockDatabase}) is held by a server with an exclusive SQLite lock for
 *   as long as it runs. The operating system drops the lock when the process ends, however it
 *   ends: a crashed server's lock never blocks a restart, while a second live one is refused at
 *   once. (The library itself may open one file twice: only servers take the lock.)
 *
 * @module
 */
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";

const privateMode = 0o600;

/** Another live process holds the database (a second server, or `migrate` while it runs). */
export class DatabaseInUseError extends Error {
  override readonly name = "DatabaseInUseError";
}

/** Creates the database file 0600 if missing, and narrows it and its companions if they exist. */
export function preparePrivateFiles(filename: string): void {
  if (!existsSync(filename)) closeSync(openSync(filename, "a", privateMode));
  for (const file of [filename, `${filename}-wal`, `${filename}-shm`, `${filename}.lock`]) {
    if (existsSync(file)) chmodSync(file, privateMode);
  }
}

/**
 * Takes the process lock of `filename`; returns the function that releases it.
 * @throws DatabaseInUseError when another live process holds it.
 */
export function lockDatabase(filename: string): () => void {
  const lockFile = `${filename}.lock`;
  if (!existsSync(lockFile)) closeSync(openSync(lockFile, "a", privateMode));
  // No busy wait: a held lock is an answer, not a moment's contention.
  const lock = new BetterSqlite3(lockFile, { timeout: 0 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code?.startsWith("SQLITE_BUSY")) {
      throw new DatabaseInUseError(
        `the SQLite database ${filename} is in use by another running process (its lock ${lockFile} is held): stop that server first, or give this one its own data directory (WAP_DATA_DIR); to run several instances, use PostgreSQL`,
      );
    }
    throw error;
  }
  return () => lock.close();
}

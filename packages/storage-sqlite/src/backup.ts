/**
 * Consistent copies of a database file with SQLite's online backup API: the copy includes what
 * is still in the write-ahead log, and may be taken while another connection (a running server)
 * keeps writing.
 *
 * @module
 */
import BetterSqlite3 from "better-sqlite3";
import { preparePrivateFiles } from "./database-files.js";

/**
 * Copies the database `from` into the new file `to` (overwritten if it exists). The copy holds
 * everything the database does, so it is created 0600 whatever the umask, like the database.
 */
export async function backupDatabase(from: string, to: string, options: { busyTimeoutMs?: number } = {}) {
  const source = new BetterSqlite3(from, { fileMustExist: true });
  try {
    // SQLite gives the copy's journal the copy's mode: the copy must be private before it opens.
    preparePrivateFiles(to);
    source.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`);
    await source.backup(to);
  } finally {
    source.close();
  }
}

/**
 * Checks that `file` is an intact SQLite database (`PRAGMA quick_check`). Returns undefined when
 * it is, or what is wrong.
 */
export function checkDatabase(file: string): string | undefined {
  let db: BetterSqlite3.Database | undefined;
  try {
    db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
    const result = db.pragma("quick_check", { simple: true });
    return result === "ok" ? undefined : `damaged: ${String(result)}`;
  } catch (error) {
    return `not a SQLite database: ${(error as Error).message}`;
  } finally {
    db?.close();
  }
}

/**
 * `wap-server backup` and `restore` for the embedded SQLite database. A backup is taken with
 * SQLite's online backup API (better-sqlite3 `db.backup`): a consistent snapshot that includes
 * what is still in the write-ahead log, taken while the server keeps serving. Copying `wap.db`
 * with `cp` misses the WAL and may restore an empty or torn database.
 *
 * PostgreSQL is backed up with its own tools (pg_dump); see docs/operations.md.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { access, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { checkSealedValues, createMasterKeyStore, SealedDataError } from "@wap/core";
import { backupDatabase, checkDatabase, createSqliteStorage } from "@wap/storage-sqlite";
import { holderOf } from "./data-lock.js";

/** A backup or restore that cannot be done; the message says why and what to do. */
export class OperatorError extends Error {
  override readonly name = "OperatorError";
}

export interface BackupResult {
  readonly file: string;
  readonly bytes: number;
}

/** Copies the database at `databaseFile` to `to` (which must not exist), consistently. */
export async function backupSqlite(databaseFile: string, to: string): Promise<BackupResult> {
  if (await exists(to))
    throw new OperatorError(`${to} exists already: choose a new file name for the backup`);
  if (!(await exists(databaseFile)))
    throw new OperatorError(`no database at ${databaseFile}: nothing to back up`);
  // Written aside and renamed into place: a backup that fails half-way leaves no file behind.
  const partial = join(dirname(to), `.${randomUUID()}.partial`);
  try {
    await backupDatabase(databaseFile, partial);
    checkIntegrity(partial);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  await rename(partial, to);
  return { file: to, bytes: (await stat(to)).size };
}

export interface RestoreOptions {
  readonly from: string;
  readonly databaseFile: string;
  /** The master key the server will run with: it must open the backup's secrets. */
  readonly masterKey: Uint8Array;
}

export interface RestoreResult {
  /** Where the database that was replaced went (with its WAL), if there was one. */
  readonly previous: string | undefined;
}

/**
 * Puts the backup `from` in place of the database, after checking that it is an intact database
 * of ours whose secrets the master key opens. Refuses while a server holds the database. The
 * database it replaces is kept beside it (`<file>.before-restore-<time>`).
 */
export async function restoreSqlite(options: RestoreOptions): Promise<RestoreResult> {
  const { from, databaseFile } = options;
  const holder = await holderOf(databaseFile);
  if (holder !== undefined) {
    throw new OperatorError(
      `a wap-server (process ${holder}) is serving ${databaseFile}: stop it before restoring`,
    );
  }
  if (!(await exists(from))) throw new OperatorError(`no backup at ${from}`);
  checkIntegrity(from);
  // A copy beside the database (same file system, so the final rename is atomic), made with the
  // backup API so that a backup file in WAL mode is read whole.
  const staged = join(dirname(databaseFile), `.${randomUUID()}.restore`);
  try {
    await backupDatabase(from, staged);
    await checkOpens(staged, options.masterKey);
  } catch (error) {
    await removeDatabase(staged);
    throw error;
  }
  let previous: string | undefined;
  if (await exists(databaseFile)) {
    previous = `${databaseFile}.before-restore-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    // The WAL and its index go with their database: SQLite finds them by name.
    await rename(databaseFile, previous);
    for (const suffix of ["-wal", "-shm"]) {
      await rename(`${databaseFile}${suffix}`, `${previous}${suffix}`).catch(ignoreMissing);
    }
  }
  await rename(staged, databaseFile);
  return { previous };
}

/** Opens the staged copy as the server would (migrating an older backup) and opens its secrets. */
async function checkOpens(file: string, masterKey: Uint8Array): Promise<void> {
  let storage: Awaited<ReturnType<typeof createSqliteStorage>>;
  try {
    storage = await createSqliteStorage({ filename: file });
  } catch (error) {
    throw new OperatorError(`the backup cannot be opened as a wap database: ${String(error)}`);
  }
  try {
    await checkSealedValues(storage, createMasterKeyStore({ masterKey }));
  } catch (error) {
    if (error instanceof SealedDataError) {
      throw new OperatorError(
        "the master key does not open the secrets in this backup: restore with the master key that was in use when the backup was taken (WAP_MASTER_KEY or the master.key file)",
      );
    }
    throw error;
  } finally {
    await storage.close();
  }
}

function checkIntegrity(file: string): void {
  const problem = checkDatabase(file);
  if (problem !== undefined) throw new OperatorError(`${file} is ${problem}`);
}

async function removeDatabase(file: string): Promise<void> {
  for (const suffix of ["", "-wal", "-shm"]) await rm(`${file}${suffix}`, { force: true });
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== "ENOENT") throw error;
}

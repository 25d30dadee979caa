/**
 * Opens the storage a database URL names. The embedded default is SQLite in the data directory;
 * PostgreSQL arrives with a later issue.
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Storage } from "@wap/core/storage";
import { ConfigError } from "./config.js";

/** Where the database lives: a SQLite file path (PostgreSQL is refused for now). */
export function sqliteFileOf(databaseUrl: string | undefined, dataDir: string): string {
  if (databaseUrl === undefined || databaseUrl === "") return resolve(join(dataDir, "wap.db"));
  if (/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    throw new ConfigError(
      "WAP_DATABASE_URL: PostgreSQL storage is not available in this build yet; unset it to use the embedded SQLite database, or set sqlite:<path>",
    );
  }
  if (/^sqlite:/i.test(databaseUrl)) {
    const path = databaseUrl.replace(/^sqlite:(\/\/)?/i, "");
    if (path === "")
      throw new ConfigError("WAP_DATABASE_URL: sqlite: needs a file path, e.g. sqlite:/var/lib/wap/wap.db");
    return path === ":memory:" ? path : resolve(path);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(databaseUrl)) {
    throw new ConfigError(
      `WAP_DATABASE_URL: unsupported database URL scheme in "${redactUrl(databaseUrl)}"; use sqlite:<path>`,
    );
  }
  return resolve(databaseUrl);
}

/** Opens (and migrates) the database. */
export async function openStorage(databaseUrl: string | undefined, dataDir: string): Promise<Storage> {
  const filename = sqliteFileOf(databaseUrl, dataDir);
  if (filename !== ":memory:") await mkdir(dirname(filename), { recursive: true, mode: 0o700 });
  const { createSqliteStorage } = await import("@wap/storage-sqlite");
  return createSqliteStorage({ filename });
}

/** A URL without its password, for messages. */
function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, "//$1:***@");
}

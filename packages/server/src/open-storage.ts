/**
 * The backend a database URL names: PostgreSQL (any number of instances share it, and with it
 * the rate-limit counters and the event bus), or SQLite, the embedded default for one instance
 * (in-memory rate limits, the platform's in-process bus).
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { EventBus } from "@wap/core";
import type { Storage } from "@wap/core/storage";
import { ConfigError, type ServerConfig } from "./config.js";
import type { Logger } from "./logger.js";
import type { PoolStats } from "./metrics.js";
import { createMemoryRateLimiters, type RateLimiters } from "./rate-limit.js";
import { StartupError } from "./startup-error.js";

/** Where the data lives. */
export type DatabaseTarget =
  | { readonly kind: "sqlite"; readonly file: string }
  | { readonly kind: "postgres"; readonly url: string };

/** Reads a database URL; unset means SQLite in the data directory. */
export function databaseTargetOf(databaseUrl: string | undefined, dataDir: string): DatabaseTarget {
  if (databaseUrl === undefined || databaseUrl === "") {
    return { kind: "sqlite", file: resolve(join(dataDir, "wap.db")) };
  }
  if (/^postgres(ql)?:\/\//i.test(databaseUrl)) {
    try {
      new URL(databaseUrl);
    } catch {
      throw new ConfigError(`WAP_DATABASE_URL: "${redactUrl(databaseUrl)}" is not a valid URL`);
    }
    return { kind: "postgres", url: databaseUrl };
  }
  if (/^sqlite:/i.test(databaseUrl)) {
    const path = databaseUrl.replace(/^sqlite:(\/\/)?/i, "");
    if (path === "")
      throw new ConfigError("WAP_DATABASE_URL: sqlite: needs a file path, e.g. sqlite:/var/lib/wap/wap.db");
    return { kind: "sqlite", file: path === ":memory:" ? path : resolve(path) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(databaseUrl)) {
    throw new ConfigError(
      `WAP_DATABASE_URL: unsupported database URL scheme in "${redactUrl(databaseUrl)}"; use postgres://... or sqlite:<path>`,
    );
  }
  return { kind: "sqlite", file: resolve(databaseUrl) };
}

/** An open backend: the storage and what goes with it. */
export interface Backend {
  readonly storage: Storage;
  /** The cross-instance bus; undefined where the platform's in-process bus is right (SQLite). */
  readonly events: EventBus | undefined;
  readonly rateLimiters: RateLimiters;
  /** The connection pool's counts, for metrics (PostgreSQL only). */
  readonly poolStats?: () => PoolStats;
  /** What to log about it (never a password). */
  readonly description: Readonly<Record<string, unknown>>;
  /**
   * Releases what the platform does not: the platform closes the storage and the bus, and this
   * runs after, once nothing uses the connections any more (the PostgreSQL pool).
   */
  release(): Promise<void>;
}

/** How the storage treats a call on itself inside one of its transactions (ServerOptions). */
export interface StorageChecks {
  readonly strictTransactions: boolean;
}

/** Opens (and migrates) the backend the configuration names. */
export async function openBackend(
  target: DatabaseTarget,
  config: Pick<ServerConfig, "databasePoolSize" | "rateLimit">,
  logger: Logger,
  checks: StorageChecks = { strictTransactions: false },
): Promise<Backend> {
  if (target.kind === "postgres") {
    // Loaded only when used: an embedded install never loads pg.
    const { openPostgresBackend } = await import("./postgres-backend.js");
    return openPostgresBackend(target.url, config, logger, checks);
  }
  const { storage, unlock } = await openSqliteStorage(target.file, checks);
  return {
    storage,
    events: undefined,
    rateLimiters: createMemoryRateLimiters(config.rateLimit),
    description: { sqlite: target.file },
    release: async () => unlock(),
  };
}

/** Opens the storage alone, for `wap-server migrate`: migrations run on open. */
export async function openStorageOnly(target: DatabaseTarget): Promise<Storage> {
  if (target.kind === "postgres") {
    const { openPostgresStorageOnly } = await import("./postgres-backend.js");
    return openPostgresStorageOnly(target.url);
  }
  const { storage, unlock } = await openSqliteStorage(target.file, { strictTransactions: false });
  const close = storage.close.bind(storage);
  return Object.assign(storage, {
    close: async () => {
      try {
        await close();
      } finally {
        unlock();
      }
    },
  });
}

/**
 * Opens the embedded database for this process alone: a second server (or `migrate`) on the
 * same file is refused with a message that says so, while the lock of a process that died is
 * gone with it (storage-sqlite database-files.ts).
 */
async function openSqliteStorage(
  file: string,
  checks: StorageChecks,
): Promise<{ storage: Storage; unlock: () => void }> {
  const { createSqliteStorage, DatabaseInUseError, lockDatabase } = await import("@wap/storage-sqlite");
  const options = { filename: file, exclusive: true, ...checks };
  if (file === ":memory:") return { storage: await createSqliteStorage(options), unlock: () => {} };
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  let unlock: () => void;
  try {
    unlock = lockDatabase(file);
  } catch (error) {
    if (error instanceof DatabaseInUseError) throw new StartupError(error.message, { cause: error });
    throw error;
  }
  try {
    // The lock keeps every other server and operator command off the file.
    return { storage: await createSqliteStorage(options), unlock };
  } catch (error) {
    unlock();
    throw error;
  }
}

/** A URL without its password, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, "//$1:***@");
}

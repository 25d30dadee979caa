/**
 * The PostgreSQL backend of one instance: one connection pool shared by the storage and the
 * rate-limit store, and the LISTEN/NOTIFY event bus (its own three connections). Whatever must
 * cross instances goes through here: rows, rate-limit counters, events.
 *
 * @module
 */
import type { EventBus } from "@wap/core";
import type { Storage } from "@wap/core/storage";
import {
  createPostgresEventBus,
  createPostgresPool,
  createPostgresStorage,
  SchemaVersionError,
} from "@wap/storage-postgres";
import type { ServerConfig } from "./config.js";
import type { Logger } from "./logger.js";
import type { Backend, StorageChecks } from "./open-storage.js";
import { createPostgresRateLimiters } from "./postgres-rate-limit.js";
import { StartupError } from "./startup-error.js";

/** Connects, migrates, and starts the shared rate limits and the event bus. */
export async function openPostgresBackend(
  url: string,
  config: Pick<ServerConfig, "databasePoolSize" | "rateLimit">,
  logger: Logger,
  checks: StorageChecks,
): Promise<Backend> {
  const pool = createPostgresPool({ connectionString: url, maxConnections: config.databasePoolSize });
  let storage: Storage | undefined;
  let events: EventBus | undefined;
  try {
    storage = await createPostgresStorage({ pool, ...checks });
    const rateLimiters = await createPostgresRateLimiters(pool, config.rateLimit);
    events = await createPostgresEventBus({
      connectionString: url,
      onError: (error) => logger.warn("event bus connection failed; reconnecting", { error: String(error) }),
    });
    return {
      storage,
      events,
      rateLimiters,
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      description: { postgres: placeOf(url), poolSize: config.databasePoolSize },
      release: () => pool.end(),
    };
  } catch (error) {
    await events?.close().catch(() => undefined);
    await storage?.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw startupErrorOf(error, url);
  }
}

/** The storage alone on a one-connection pool, for `wap-server migrate`. */
export async function openPostgresStorageOnly(url: string): Promise<Storage> {
  try {
    return await createPostgresStorage({ connectionString: url, maxConnections: 1 });
  } catch (error) {
    throw startupErrorOf(error, url);
  }
}

function startupErrorOf(error: unknown, url: string): unknown {
  if (error instanceof SchemaVersionError) return new StartupError(error.message, { cause: error });
  if (!(error instanceof Error)) return error;
  // pg's own errors carry a SQLSTATE or a socket code; StorageUnavailableError wraps the latter.
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || error.name === "StorageUnavailableError") {
    return new StartupError(`cannot use PostgreSQL at ${placeOf(url)}: ${error.message}`, { cause: error });
  }
  return error;
}

/** `host:port/database`: enough to tell which server, never the password. */
function placeOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
}

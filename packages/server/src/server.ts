/**
 * `createServer`: the whole server in a function, for the `wap-server` binary, for embedding and
 * for tests (port 0 picks a free port).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createMasterKeyStore, createPlatform, type Platform, type PlatformOptions } from "@wap/core";
import type { Storage } from "@wap/core/storage";
import { defaultConfig, type ServerConfig } from "./config.js";
import { normalizeOrigins } from "./csrf.js";
import type { EdgeSettings } from "./edge.js";
import { listen, type TlsFiles } from "./listener.js";
import { createJsonLogger, type Logger } from "./logger.js";
import { loadMasterKey } from "./master-key.js";
import { openStorage, sqliteFileOf } from "./open-storage.js";
import { createMemoryRateLimiters, type RateLimiters, type RateLimitSettings } from "./rate-limit.js";
import { createRequestHandler } from "./request-handler.js";

export interface ServerOptions extends Partial<Omit<ServerConfig, "rateLimit">> {
  readonly rateLimit?: Partial<RateLimitSettings>;
  /**
   * Serve this platform instead of building one from the configuration. The server does not
   * close it: its owner does.
   */
  readonly platform?: Platform;
  /** Use this storage instead of opening `databaseUrl`; the server closes it on `close()`. */
  readonly storage?: Storage;
  /** Extra options for the platform the server builds (clock, password hasher, token lifetimes). */
  readonly platformOptions?: Omit<PlatformOptions, "storage" | "keyStore">;
  /** Replace the in-memory rate limiters (e.g. with a shared store for several instances). */
  readonly rateLimiters?: RateLimiters;
  /** Where logs go; default JSON lines on stderr at `logLevel`. */
  readonly logger?: Logger;
}

export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080` (`https://` with TLS). */
  readonly url: string;
  readonly port: number;
  readonly platform: Platform;
  /**
   * Stops accepting connections, lets open requests finish (up to `shutdownGraceSeconds`, then
   * cuts them), and closes the storage it opened. Safe to call more than once.
   */
  close(): Promise<void>;
}

/** Starts a server. Resolves once it listens. */
export async function createServer(options: ServerOptions = {}): Promise<RunningServer> {
  const config = configOf(options);
  const logger = options.logger ?? createJsonLogger(config.logLevel);
  const tls = await readTls(config);

  const ownsPlatform = options.platform === undefined;
  const platform = options.platform ?? (await buildPlatform(config, options, logger));
  const shutdown = new AbortController();
  const edge: EdgeSettings = {
    platform,
    rateLimiters: options.rateLimiters ?? createMemoryRateLimiters(config.rateLimit),
    trustedProxyHops: config.trustProxyHops,
    allowedOrigins: normalizeOrigins(config.allowedOrigins),
    secure: tls !== undefined,
    logger,
  };
  const handler = createRequestHandler({
    edge,
    storage: platform.services.storage,
    bodyLimitBytes: config.bodyLimitBytes,
    shutdownSignal: shutdown.signal,
  });

  let listener: Awaited<ReturnType<typeof listen>>;
  try {
    listener = await listen({ handler, host: config.host, port: config.port, tls });
  } catch (error) {
    if (ownsPlatform) await platform.close();
    throw error;
  }
  const url = `${tls ? "https" : "http"}://${urlHost(config.host)}:${listener.port}`;
  logger.info("listening", { url, tls: tls !== undefined, protocols: "HTTP/1.1, HTTP/2 (h2c/h2)" });

  let closing: Promise<void> | undefined;
  return {
    url,
    port: listener.port,
    platform,
    close() {
      closing ??= (async () => {
        logger.info("shutting down", { graceSeconds: config.shutdownGraceSeconds });
        await listener.close(config.shutdownGraceSeconds * 1000, () => shutdown.abort());
        shutdown.abort();
        if (ownsPlatform) await platform.close();
        logger.info("stopped");
      })();
      return closing;
    },
  };
}

async function buildPlatform(
  config: ServerConfig,
  options: ServerOptions,
  logger: Logger,
): Promise<Platform> {
  // Refuse a bad database URL before anything is written to the data directory.
  const sqliteFile = options.storage ? undefined : sqliteFileOf(config.databaseUrl, config.dataDir);
  const keyFile = resolve(config.masterKeyFile ?? join(config.dataDir, "master.key"));
  const { masterKey, generated } = await loadMasterKey({ masterKey: config.masterKey, file: keyFile });
  if (generated)
    logger.warn("generated a new master key; back it up, it seals every CA key", { file: keyFile });
  const storage = options.storage ?? (await openStorage(config.databaseUrl, config.dataDir));
  if (sqliteFile) logger.info("storage opened", { sqlite: sqliteFile });
  try {
    return await createPlatform({
      ...options.platformOptions,
      storage,
      keyStore: createMasterKeyStore({ masterKey }),
    });
  } catch (error) {
    await storage.close();
    throw error;
  }
}

async function readTls(config: ServerConfig): Promise<TlsFiles | undefined> {
  if (config.tlsCert === undefined || config.tlsKey === undefined) return undefined;
  const [cert, key] = await Promise.all([readFile(config.tlsCert), readFile(config.tlsKey)]);
  return { cert, key };
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

/** The settings among the options, over the defaults. */
function configOf(options: ServerOptions): ServerConfig {
  const config: Record<string, unknown> = { ...defaultConfig };
  for (const key of Object.keys(defaultConfig) as (keyof ServerConfig)[]) {
    if (key !== "rateLimit" && options[key] !== undefined) config[key] = options[key];
  }
  config.rateLimit = { ...defaultConfig.rateLimit, ...definedOnly(options.rateLimit ?? {}) };
  return config as unknown as ServerConfig;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

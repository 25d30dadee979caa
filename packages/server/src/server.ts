/**
 * `createServer`: the whole server in a function, for the `wap-server` binary, for embedding and
 * for tests (port 0 picks a free port).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  createMasterKeyStore,
  createPlatform,
  type IntegrationServices,
  type Mailer,
  type Platform,
  type PlatformOptions,
  SealedDataError,
} from "@wap/core";
import type { Storage } from "@wap/core/storage";
import { defaultConfig, type ServerConfig } from "./config.js";
import { normalizeOrigins } from "./csrf.js";
import { createServerInstance } from "./daemons/instance.js";
import { createSessionRelayHub } from "./daemons/relay-hub.js";
import { createTerminalEndpoint } from "./daemons/terminal-endpoint.js";
import type { EdgeSettings } from "./edge.js";
import { loadIntegrations } from "./integrations-config.js";
import { listen, type TlsFiles } from "./listener.js";
import { createJsonLogger, type Logger } from "./logger.js";
import { createServerMailer } from "./mailer.js";
import { loadMasterKey } from "./master-key.js";
import { type Backend, databaseTargetOf, openBackend } from "./open-storage.js";
import { createMemoryRateLimiters, type RateLimiters, type RateLimitSettings } from "./rate-limit.js";
import { createRequestHandler } from "./request-handler.js";
import { StartupError } from "./startup-error.js";

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
  /**
   * Replace the rate limiters: by default in memory on SQLite, and on PostgreSQL in the
   * database, shared by every instance.
   */
  readonly rateLimiters?: RateLimiters;
  /** Where logs go; default JSON lines on stderr at `logLevel`. */
  readonly logger?: Logger;
  /**
   * Billing provider, licence, SSO options for the platform the server builds: these win over
   * those the settings (Stripe, licence) make. A `platform` given ready-made has its own.
   */
  readonly integrations?: IntegrationServices;
  /**
   * Names this instance as the holder of daemon control streams (docs/daemons.md). Default: a
   * random UUID per start. A fixed id must be unique among running instances and hold no `/`.
   */
  readonly instanceId?: string;
}

export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080` (`https://` with TLS). */
  readonly url: string;
  readonly port: number;
  readonly platform: Platform;
  /** This instance's id, the first part of the holder of each control stream it serves. */
  readonly instanceId: string;
  /**
   * Stops accepting connections, ends open event streams (their clients reconnect elsewhere),
   * lets open requests finish (up to `shutdownGraceSeconds`, then cuts them), then closes the
   * event bus and the storage, and drains the connection pool. Safe to call more than once.
   */
  close(): Promise<void>;
}

/** Starts a server. Resolves once it listens. */
export async function createServer(options: ServerOptions = {}): Promise<RunningServer> {
  const config = configOf(options);
  const logger = options.logger ?? createJsonLogger(config.logLevel);
  const tls = await readTls(config);
  // Read before the platform is built: a bad setting must not leave it open.
  const integrations = withOutboundAllowance(
    { ...(await loadIntegrations(config, logger)), ...options.integrations },
    config.outboundAllowNetworks,
  );

  const ownsPlatform = options.platform === undefined;
  const built = options.platform
    ? undefined
    : await buildPlatform(config, options, integrations, logger, tls !== undefined);
  const platform = options.platform ?? built!.platform;
  const backend = built?.backend;
  const shutdown = new AbortController();
  const closing = new AbortController();
  const instance = createServerInstance({
    storage: platform.services.storage,
    clock: platform.services.clock,
    logger,
    leaseSeconds: config.instanceLeaseSeconds,
    keepaliveSeconds: config.daemonKeepaliveSeconds,
    ...(options.instanceId !== undefined && { id: options.instanceId }),
  });
  // Control streams end with the other streams: their daemons reconnect to another instance.
  closing.signal.addEventListener("abort", () => instance.endStreams(), { once: true });
  // Terminal sessions are relayed where their daemon's stream lands, under the same instance id.
  const sessionRelay = createSessionRelayHub({
    services: platform.services,
    logger,
    instanceId: instance.id,
    internalUrl: () => config.internalUrl ?? url,
  });
  const edge: EdgeSettings = {
    platform,
    rateLimiters: options.rateLimiters ?? backend?.rateLimiters ?? createMemoryRateLimiters(config.rateLimit),
    trustedProxyHops: config.trustProxyHops,
    allowedOrigins: normalizeOrigins(config.allowedOrigins),
    secure: tls !== undefined,
    publicHttps: platform.services.config.publicBaseUrl.startsWith("https:"),
    logger,
    closing: closing.signal,
    daemonStreams: instance,
    sessionRelay,
  };
  const handler = createRequestHandler({
    edge,
    storage: platform.services.storage,
    bodyLimitBytes: config.bodyLimitBytes,
    bodyTimeoutMs: config.bodyTimeoutSeconds * 1000,
    shutdownSignal: shutdown.signal,
  });

  let listener: Awaited<ReturnType<typeof listen>>;
  try {
    await instance.start();
    listener = await listen({
      handler,
      host: config.host,
      port: config.port,
      tls,
      onWebSocket: createTerminalEndpoint(edge, sessionRelay),
      headersTimeoutMs: config.headersTimeoutSeconds * 1000,
      requestTimeoutMs: (config.headersTimeoutSeconds + config.bodyTimeoutSeconds) * 1000,
      maxConnectionsPerClient: config.maxConnectionsPerClient,
    });
  } catch (error) {
    await instance.stop();
    if (ownsPlatform) await platform.close();
    await backend?.release();
    await built?.mailer?.close?.();
    throw error;
  }
  const url = `${tls ? "https" : "http"}://${urlHost(config.host)}:${listener.port}`;
  logger.info("listening", { url, tls: tls !== undefined, protocols: "HTTP/1.1, HTTP/2 (h2c/h2)" });
  sessionRelay.start();

  let stopping: Promise<void> | undefined;
  return {
    url,
    port: listener.port,
    platform,
    instanceId: instance.id,
    close() {
      stopping ??= (async () => {
        logger.info("shutting down", { graceSeconds: config.shutdownGraceSeconds });
        // Event streams never finish on their own; ending them first lets the drain below finish.
        closing.abort();
        // Terminal sessions end here, while their sockets and the storage are still open.
        await sessionRelay.close();
        await listener.close(config.shutdownGraceSeconds * 1000, () => shutdown.abort());
        shutdown.abort();
        // Whatever a stream could not mark offline itself, while the storage is still open.
        await instance.stop();
        // In-flight requests are done: pending events go out, then the bus and storage close,
        // then the pool they shared drains.
        if (ownsPlatform) await platform.close();
        await backend?.release();
        await built?.mailer?.close?.();
        logger.info("stopped");
      })();
      return stopping;
    },
  };
}

async function buildPlatform(
  config: ServerConfig,
  options: ServerOptions,
  integrations: IntegrationServices,
  logger: Logger,
  secure: boolean,
): Promise<{ platform: Platform; backend: Backend; mailer: Mailer | undefined }> {
  // Refuse a bad database URL before anything is written to the data directory.
  const target = options.storage ? undefined : databaseTargetOf(config.databaseUrl, config.dataDir);
  const keyFile = resolve(config.masterKeyFile ?? join(config.dataDir, "master.key"));
  const { masterKey, generated } = await loadMasterKey({
    masterKey: config.masterKey,
    file: keyFile,
    generate: target?.kind !== "postgres",
  });
  if (generated)
    logger.warn("generated a new master key; back it up, it seals every CA key", { file: keyFile });
  const started = performance.now();
  const backend: Backend = target
    ? await openBackend(target, config, logger)
    : {
        storage: options.storage!,
        events: undefined,
        rateLimiters: createMemoryRateLimiters(config.rateLimit),
        description: { storage: "given" },
        release: async () => undefined,
      };
  logger.info("storage opened", { ...backend.description, ms: Math.round(performance.now() - started) });
  let mailer: Mailer | undefined;
  try {
    // A mailer given by the embedding application is its own; one built here is closed with the server.
    mailer = options.platformOptions?.mailer
      ? undefined
      : createServerMailer(config, target?.kind !== "postgres", logger);
    const publicBaseUrl =
      config.publicUrl ?? options.platformOptions?.config?.publicBaseUrl ?? defaultPublicUrl(config, secure);
    if (publicBaseUrl !== undefined) logger.info("public URL", { url: publicBaseUrl });
    const platform = await createPlatform({
      onPublishError: (error, topic) =>
        logger.warn("event not published; subscribers miss it", { topic, error: String(error) }),
      ...(mailer && { mailer }),
      ...options.platformOptions,
      ...integrations,
      config: { ...options.platformOptions?.config, ...(publicBaseUrl !== undefined && { publicBaseUrl }) },
      storage: backend.storage,
      keyStore: createMasterKeyStore({ masterKey }),
      ...(backend.events && { events: backend.events }),
    });
    return { platform, backend, mailer };
  } catch (error) {
    await mailer?.close?.().catch(() => undefined);
    await backend.events?.close().catch(() => undefined);
    await backend.storage.close().catch(() => undefined);
    await backend.release().catch(() => undefined);
    if (error instanceof SealedDataError) {
      throw new StartupError(
        "the master key does not open the secrets stored in this database: every instance over one database must use the same WAP_MASTER_KEY",
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * Where links point when no public URL is configured: this server on localhost (a passkey's RP ID
 * must be a host name, not 127.0.0.1). Undefined for port 0, whose port is not known yet: the
 * platform's default stays.
 */
function defaultPublicUrl(config: ServerConfig, secure: boolean): string | undefined {
  if (config.port === 0) return undefined;
  return `${secure ? "https" : "http"}://localhost:${config.port}`;
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

/** The operator's allowance of non-public networks, for the fetches to identity providers. */
function withOutboundAllowance(
  integrations: IntegrationServices,
  allowNetworks: readonly string[],
): IntegrationServices {
  if (allowNetworks.length === 0) return integrations;
  return { ...integrations, sso: { allowNetworks, ...integrations.sso } };
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

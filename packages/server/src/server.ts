/**
 * `createServer`: the whole server in a function, for the `wap-server` binary, for embedding and
 * for tests (port 0 picks a free port).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import {
  createMasterKeyStore,
  createPlatform,
  type Mailer,
  type Pkcs11Token,
  type Platform,
  type PlatformOptions,
  SealedDataError,
} from "@wap/core";
import { type IntegrationServices, signAuditCheckpoints } from "@wap/core/internal";
import type { Storage } from "@wap/core/storage";
import { defaultConfig, type ServerConfig } from "./config.js";
import { type ConsoleAssets, loadConsoleAssets } from "./console-assets.js";
import { normalizeOrigins } from "./csrf.js";
import { createServerInstance } from "./daemons/instance.js";
import { createSessionRelayHub } from "./daemons/relay-hub.js";
import { createTerminalEndpoint } from "./daemons/terminal-endpoint.js";
import { type DiagnosticsListener, listenDiagnostics, parseListenAddress } from "./diagnostics.js";
import type { EdgeSettings } from "./edge.js";
import { loadInstallFiles } from "./install-files.js";
import { loadIntegrations } from "./integrations-config.js";
import { type Listener, listen, type TlsFiles } from "./listener.js";
import { createJsonLogger, type Logger, streamCheckFailed } from "./logger.js";
import { createServerMailer } from "./mailer.js";
import { loadMasterKey, masterKeyFileOf, parseMasterKeySetting } from "./master-key.js";
import { createServerMetrics, type ServerMetrics } from "./metrics.js";
import { type Backend, databaseTargetOf, openBackend } from "./open-storage.js";
import { type DataLock, lockDatabase } from "./operator/data-lock.js";
import { openConfiguredToken } from "./pkcs11-token.js";
import { createMemoryRateLimiters, type RateLimiters, type RateLimitSettings } from "./rate-limit.js";
import { createRequestHandler } from "./request-handler.js";
import { StartupError } from "./startup-error.js";
import { startTracing, type Tracing } from "./tracing.js";

export interface ServerOptions extends Partial<Omit<ServerConfig, "rateLimit">> {
  readonly rateLimit?: Partial<RateLimitSettings>;
  /**
   * Serve this platform instead of building one from the configuration. The server does not
   * close it: its owner does.
   */
  readonly platform?: Platform;
  /** Use this storage instead of opening `databaseUrl`; the server closes it on `close()`. */
  readonly storage?: Storage;
  /**
   * For test suites: the storage the server opens refuses a call on itself made inside one of
   * its transactions (the caller meant `tx`) instead of joining it. Default false.
   */
  readonly strictTransactions?: boolean;
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
  /** Where the built console is (default: packages/console/dist next to this package). */
  readonly consoleDir?: string;
  /**
   * Where the release served under /install/ is: a folder with SHA256SUMS and the packages it
   * lists (default: the package's own `release/`, else the repository's `pnpm release` output).
   */
  readonly installDir?: string;
}

export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080` (`https://` with TLS). */
  readonly url: string;
  readonly port: number;
  /** Base URL of the diagnostics listener (/metrics, /healthz, /readyz), when it is on. */
  readonly diagnosticsUrl: string | undefined;
  readonly platform: Platform;
  /** This instance's id, the first part of the holder of each control stream it serves. */
  readonly instanceId: string;
  /**
   * Reads the TLS certificate and key files again and serves new connections with them; open
   * connections keep theirs. Rejects (and keeps the old pair) when the files cannot be read or do
   * not make a valid pair. Does nothing without TLS.
   */
  reloadTls(): Promise<void>;
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
  const diagnosticsAddress =
    config.diagnosticsAddress === undefined ? undefined : parseListenAddress(config.diagnosticsAddress);
  const metrics = diagnosticsAddress ? createServerMetrics() : undefined;
  const tracing = await startTracing(config, logger);
  // Read before the platform is built: a bad setting must not leave it open.
  const integrations = withWebhookSettings(
    withOutboundAllowance(
      { ...(await loadIntegrations(config, logger)), ...options.integrations },
      config.outboundAllowNetworks,
    ),
    config,
    logger,
  );

  const ownsPlatform = options.platform === undefined;
  const built = options.platform
    ? undefined
    : await buildPlatform(config, options, integrations, logger, tls !== undefined, metrics, tracing);
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
    closing: closing.signal,
  });
  const edge: EdgeSettings = {
    // The platform runs the daemon's streams over this instance's resources.
    platform: platform.withStreamHosts({ daemonStreams: instance, terminalRelays: sessionRelay }),
    rateLimiters: options.rateLimiters ?? backend?.rateLimiters ?? createMemoryRateLimiters(config.rateLimit),
    trustedProxyHops: config.trustProxyHops,
    allowedOrigins: normalizeOrigins(config.allowedOrigins),
    secure: tls !== undefined,
    publicHttps: platform.services.config.publicBaseUrl.startsWith("https:"),
    logger,
    closing: closing.signal,
    ...(metrics && { metrics }),
    ...(tracing && { tracing }),
  };
  metrics?.setSources({
    openControlStreams: () => instance.openStreams,
    openTerminalSessions: () => sessionRelay.openSessions,
    ...(backend?.poolStats && { databasePool: backend.poolStats }),
  });
  const consoleAssets = config.console ? await loadConsole(options.consoleDir, logger) : undefined;
  const install = await loadInstallFiles({
    ...(options.installDir !== undefined && { dir: options.installDir }),
    serverUrl: platform.services.config.publicBaseUrl,
  });
  const handler = createRequestHandler({
    edge,
    console: consoleAssets,
    install,
    storage: platform.services.storage,
    bodyLimitBytes: config.bodyLimitBytes,
    bodyTimeoutMs: config.bodyTimeoutSeconds * 1000,
    shutdownSignal: shutdown.signal,
  });

  let opened: Listener | undefined;
  let diagnostics: DiagnosticsListener | undefined;
  let stopLagProbe: (() => void) | undefined;
  const stopCheckpoints = startAuditCheckpoints(platform, config.auditCheckpointSeconds, logger);
  try {
    await instance.start();
    opened = await listen({
      handler,
      host: config.host,
      port: config.port,
      tls,
      onWebSocket: createTerminalEndpoint(edge, sessionRelay),
      headersTimeoutMs: config.headersTimeoutSeconds * 1000,
      requestTimeoutMs: (config.headersTimeoutSeconds + config.bodyTimeoutSeconds) * 1000,
      maxConnectionsPerClient: config.maxConnectionsPerClient,
    });
    if (diagnosticsAddress && metrics) {
      diagnostics = await listenDiagnostics({
        ...diagnosticsAddress,
        metrics,
        ready: () => platform.services.storage.ping(),
      });
      stopLagProbe = await startLagProbe(platform, metrics, instance.id, logger);
    }
  } catch (error) {
    await opened?.close(0);
    stopLagProbe?.();
    await stopCheckpoints();
    await instance.stop();
    if (ownsPlatform) await platform.close();
    await backend?.release();
    await built?.mailer?.close?.();
    built?.pkcs11Token?.close();
    await built?.lock?.release();
    await tracing?.shutdown();
    throw error;
  }
  const listener = opened;
  const url = `${tls ? "https" : "http"}://${urlHost(config.host)}:${listener.port}`;
  logger.info("listening", {
    url,
    tls: tls !== undefined,
    // What this port actually speaks: with TLS, HTTP/2 by ALPN; without, by prior knowledge (h2c).
    http: tls ? ["HTTP/1.1", "HTTP/2 (h2, ALPN)"] : ["HTTP/1.1", "HTTP/2 (h2c, prior knowledge)"],
    protocols: ["Connect", "gRPC", "gRPC-Web", "REST", "WebSocket (terminals)"],
    ...(diagnostics && { diagnostics: diagnostics.url }),
  });
  sessionRelay.start();

  let stopping: Promise<void> | undefined;
  return {
    url,
    port: listener.port,
    diagnosticsUrl: diagnostics?.url,
    platform,
    instanceId: instance.id,
    async reloadTls() {
      if (tls === undefined) return;
      const next = await readTls(config);
      listener.setTls(next!);
      logger.info("TLS certificate reloaded", { cert: config.tlsCert });
    },
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
        // After the last request: no signature is under way.
        built?.pkcs11Token?.close();
        stopLagProbe?.();
        await stopCheckpoints();
        await diagnostics?.close();
        await built?.lock?.release();
        await tracing?.shutdown();
        logger.info("stopped");
      })();
      return stopping;
    },
  };
}

async function loadConsole(dir: string | undefined, logger: Logger): Promise<ConsoleAssets | undefined> {
  const assets = await loadConsoleAssets(dir);
  if (assets === undefined) {
    logger.warn("the web console is not built, so / is not served: run `pnpm --filter @wap/console build`", {
      dir: dir ?? "packages/console/dist",
    });
  }
  return assets;
}

async function buildPlatform(
  config: ServerConfig,
  options: ServerOptions,
  integrations: IntegrationServices,
  logger: Logger,
  secure: boolean,
  metrics: ServerMetrics | undefined,
  tracing: Tracing | undefined,
): Promise<{
  platform: Platform;
  backend: Backend;
  mailer: Mailer | undefined;
  lock: DataLock | undefined;
  pkcs11Token: Pkcs11Token | undefined;
}> {
  // Refuse a bad database URL before anything is written to the data directory.
  const target = options.storage ? undefined : databaseTargetOf(config.databaseUrl, config.dataDir);
  const previousKey =
    config.previousMasterKey === undefined
      ? undefined
      : parseMasterKeySetting(config.previousMasterKey, "WAP_PREVIOUS_MASTER_KEY");
  const keyFile = masterKeyFileOf(config);
  const { masterKey, generated } = await loadMasterKey({
    masterKey: config.masterKey,
    file: keyFile,
    generate: target?.kind !== "postgres",
  });
  if (generated)
    logger.warn("generated a new master key; back it up, it seals every CA key", { file: keyFile });
  // restore and rotate-master-key refuse to touch an embedded database a server is using.
  const lock =
    target?.kind === "sqlite" && target.file !== ":memory:"
      ? await lockDatabase(target.file).catch((error: unknown) => {
          throw new StartupError((error as Error).message, { cause: error });
        })
      : undefined;
  const started = performance.now();
  const backend: Backend = target
    ? await openBackend(target, config, logger, {
        strictTransactions: options.strictTransactions === true,
      }).catch(async (error: unknown) => {
        await lock?.release();
        throw error;
      })
    : {
        storage: options.storage!,
        events: undefined,
        rateLimiters: createMemoryRateLimiters(config.rateLimit),
        description: { storage: "given" },
        release: async () => undefined,
      };
  logger.info("storage opened", { ...backend.description, ms: Math.round(performance.now() - started) });
  let mailer: Mailer | undefined;
  let pkcs11Token: Pkcs11Token | undefined;
  try {
    pkcs11Token = await openConfiguredToken(config);
    if (pkcs11Token)
      logger.info("PKCS#11 token opened", { module: config.pkcs11Module, token: pkcs11Token.tokenLabel });
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
      onStreamCheckError: (error, requestId) =>
        logger.warn(streamCheckFailed, { requestId, error: String(error) }),
      ...(mailer && { mailer }),
      ...options.platformOptions,
      ...integrations,
      config: {
        cliLoginMaxPendingPerAddress: config.cliLoginMaxPendingPerAddress,
        workspaceMaxDaemons: config.workspaceMaxDaemons,
        workspaceMaxTargets: config.workspaceMaxTargets,
        workspaceMaxServiceAccounts: config.workspaceMaxServiceAccounts,
        workspaceMaxRecordingBytes: config.workspaceMaxRecordingBytes,
        workspaceMaxOpenSessions: config.workspaceMaxOpenSessions,
        ...options.platformOptions?.config,
        ...(publicBaseUrl !== undefined && { publicBaseUrl }),
      },
      storage: tracing
        ? tracing.instrumentStorage(backend.storage, target?.kind === "postgres" ? "postgresql" : "sqlite")
        : backend.storage,
      keyStore: createMasterKeyStore({
        masterKey,
        ...(previousKey && { previousKeys: [{ masterKey: previousKey }] }),
      }),
      ...(backend.events && { events: backend.events }),
      ...(metrics && { observer: metrics }),
      ...(pkcs11Token && { pkcs11Token }),
    });
    return { platform, backend, mailer, lock, pkcs11Token };
  } catch (error) {
    pkcs11Token?.close();
    await mailer?.close?.().catch(() => undefined);
    await backend.events?.close().catch(() => undefined);
    await backend.storage.close().catch(() => undefined);
    await backend.release().catch(() => undefined);
    await lock?.release();
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

/** The topic of the probes that measure the event bus's lag between instances. */
const lagProbeTopic = "wap.diagnostics.lag-probe";
const lagProbeIntervalMs = 5_000;

/**
 * Every instance publishes a probe on the event bus every few seconds with its clock's time, and
 * every instance observes how long each probe took to reach it.
 */
async function startLagProbe(platform: Platform, metrics: ServerMetrics, instanceId: string, logger: Logger) {
  const { events, clock } = platform.services;
  const unsubscribe = await events.subscribe(lagProbeTopic, (payload) => {
    const sentAt = (payload as { sentAt?: unknown } | null)?.sentAt;
    if (typeof sentAt === "number") metrics.eventBusLag((clock.now().getTime() - sentAt) / 1000);
  });
  const publish = () =>
    void events
      .publish(lagProbeTopic, { sentAt: clock.now().getTime(), from: instanceId })
      .catch((error: unknown) =>
        // The next probe tries again; the lag series shows the gap.
        logger.warn("event bus lag probe not published", { instanceId, error: String(error) }),
      );
  publish();
  const timer = setInterval(publish, lagProbeIntervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    unsubscribe();
  };
}

/**
 * Signs the heads of the audit chains that moved, every `seconds` (every instance does; a head
 * signed twice is harmless). Resolves, when stopped, once a round under way has ended.
 */
function startAuditCheckpoints(platform: Platform, seconds: number, logger: Logger): () => Promise<void> {
  if (seconds === 0) return async () => {};
  let round: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    round = round.then(() =>
      signAuditCheckpoints(platform.services).then(
        () => undefined,
        (error: unknown) => logger.warn("audit checkpoints not signed", { error: String(error) }),
      ),
    );
  }, seconds * 1000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await round;
  };
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

/** The operator's allowance of non-public networks, for the fetches to identity providers (webhooks: below). */
function withOutboundAllowance(
  integrations: IntegrationServices,
  allowNetworks: readonly string[],
): IntegrationServices {
  if (allowNetworks.length === 0) return integrations;
  return { ...integrations, sso: { allowNetworks, ...integrations.sso } };
}

/** The webhook settings of the configuration, under those the embedding application gave. */
function withWebhookSettings(
  integrations: IntegrationServices,
  config: ServerConfig,
  logger: Logger,
): IntegrationServices {
  return {
    ...integrations,
    webhooks: {
      onError: (error: unknown) =>
        logger.warn("webhook delivery round failed; retrying", { error: String(error) }),
      allowNetworks: config.outboundAllowNetworks,
      allowHttp: config.webhookAllowHttp,
      retryMaxMs: config.webhookRetryMaxSeconds * 1000,
      disableAfterMs: config.webhookDisableAfterSeconds * 1000,
      ...integrations.webhooks,
    },
  };
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

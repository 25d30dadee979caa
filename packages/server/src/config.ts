/**
 * Server settings: every one by a `WAP_*` environment variable and by a flag (the flag wins),
 * from one table that also writes `--help`.
 *
 * @module
 */
import { availableParallelism } from "node:os";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { defaultWorkspaceQuotaConfig, parseNetworks } from "@wap/core/internal";
import { parseListenAddress } from "./diagnostics.js";
import {
  defaultIntegrationConfig,
  type IntegrationConfig,
  integrationConfigProblem,
  integrationSettings,
} from "./integrations-config.js";
import { type LogLevel, logLevels } from "./logger.js";
import { defaultRateLimitSettings, type RateLimitSettings } from "./rate-limit.js";

/** The Stripe and licence settings are in integrations-config.ts. */
export interface ServerConfig extends IntegrationConfig {
  readonly host: string;
  readonly port: number;
  /** Where the embedded database and the generated master key live. */
  readonly dataDir: string;
  /** `postgres://...`, `sqlite:<path>` (or a plain path); unset means `<dataDir>/wap.db`. */
  readonly databaseUrl: string | undefined;
  /** Most PostgreSQL connections this instance opens for requests (storage and rate limits). */
  readonly databasePoolSize: number;
  /** Base64 master key; unset means the key file (generated on first start). */
  readonly masterKey: string | undefined;
  /** File holding the base64 master key; unset means `<dataDir>/master.key`. */
  readonly masterKeyFile: string | undefined;
  /**
   * The master key being rotated away from (base64): values sealed under it still open, new ones
   * are sealed under `masterKey`. Only during a rotation.
   */
  readonly previousMasterKey: string | undefined;
  /** The PKCS#11 library for CA keys in a hardware token; unset means no token (software keys only). */
  readonly pkcs11Module: string | undefined;
  /** The label of the token in that library. */
  readonly pkcs11TokenLabel: string | undefined;
  /** The token's user PIN, or the file holding it. */
  readonly pkcs11Pin: string | undefined;
  readonly pkcs11PinFile: string | undefined;
  /** `host:port` of the diagnostics listener (/metrics, /healthz, /readyz); unset means off. */
  readonly diagnosticsAddress: string | undefined;
  /** PEM certificate chain and private key files; both or neither. */
  readonly tlsCert: string | undefined;
  readonly tlsKey: string | undefined;
  readonly rateLimit: RateLimitSettings;
  readonly bodyLimitBytes: number;
  /** Origins (besides our own) whose pages may use the session cookie. */
  readonly allowedOrigins: readonly string[];
  /** How many proxies in front of the server to believe in `X-Forwarded-*` (0: none). */
  readonly trustProxyHops: number;
  readonly logLevel: LogLevel;
  /** How long a shutdown waits for open requests before cutting them. */
  readonly shutdownGraceSeconds: number;
  /** How often the heads of the audit chains that moved are signed (docs/audit.md); 0: never. */
  readonly auditCheckpointSeconds: number;
  /** Whether webhook endpoints may be plain http URLs. */
  readonly webhookAllowHttp: boolean;
  /** The longest wait between two attempts to deliver to a failing webhook endpoint. */
  readonly webhookRetryMaxSeconds: number;
  /** How long a webhook endpoint may fail before the server disables it. */
  readonly webhookDisableAfterSeconds: number;
  /**
   * Where users reach the web app (links in mails, the CLI's verification URL, the passkey
   * origin); unset means `http(s)://localhost:<port>`.
   */
  readonly publicUrl: string | undefined;
  /**
   * Where the other instances reach this one, to forward browsers to the terminal sessions it
   * relays; unset means the URL it listens on.
   */
  readonly internalUrl: string | undefined;
  /** `smtp://` or `smtps://` URL of the mail relay; unset means the outbox (SQLite) or no mail. */
  readonly smtpUrl: string | undefined;
  /** The sender of account mails; needed with `smtpUrl`. */
  readonly mailFrom: string | undefined;
  /** Unsolicited HeartbeatAck interval on daemon control streams, so proxies never see them idle. */
  readonly daemonKeepaliveSeconds: number;
  /**
   * How long this instance's lease on its daemon control streams lasts without renewal (renewed
   * every third of it): a crashed instance's daemons count offline within about 4/3 of this.
   */
  readonly instanceLeaseSeconds: number;
  /** Server processes sharing the port (PostgreSQL only when more than one); see workers.ts. */
  readonly workers: number;
  /**
   * Non-public networks (CIDR) the server may fetch from when it reads an identity provider's
   * documents; none by default (loopback, private, link-local and unique-local are refused).
   */
  readonly outboundAllowNetworks: readonly string[];
  /** A request must have sent its headers within this time. */
  readonly headersTimeoutSeconds: number;
  /** A request body (other than a client stream's) must have arrived whole within this time. */
  readonly bodyTimeoutSeconds: number;
  /** Connections one client address may hold open at once (0: no limit). */
  readonly maxConnectionsPerClient: number;
  /** Most CLI logins waiting for approval per client address. */
  readonly cliLoginMaxPendingPerAddress: number;
  /** Per-workspace quotas (core's `WorkspaceQuotaConfig`). */
  readonly workspaceMaxDaemons: number;
  readonly workspaceMaxTargets: number;
  readonly workspaceMaxServiceAccounts: number;
  readonly workspaceMaxRecordingBytes: number;
  readonly workspaceMaxOpenSessions: number;
  /** Serve the web console at `/` (every GET that is not an API path). */
  readonly console: boolean;
  /** OTLP/HTTP collector of traces ("": no tracing, and the SDK is never loaded). */
  readonly otlpEndpoint: string;
  /** The traces URL itself, when it is not `<otlpEndpoint>/v1/traces`. */
  readonly otlpTracesEndpoint: string;
  /** The `service.name` of the spans. */
  readonly otelServiceName: string;
}

export const defaultConfig: ServerConfig = {
  host: "127.0.0.1",
  port: 8080,
  dataDir: "./.wap-data",
  databaseUrl: undefined,
  databasePoolSize: 10,
  masterKey: undefined,
  masterKeyFile: undefined,
  previousMasterKey: undefined,
  pkcs11Module: undefined,
  pkcs11TokenLabel: undefined,
  pkcs11Pin: undefined,
  pkcs11PinFile: undefined,
  diagnosticsAddress: undefined,
  tlsCert: undefined,
  tlsKey: undefined,
  rateLimit: defaultRateLimitSettings,
  bodyLimitBytes: 1024 * 1024,
  allowedOrigins: [],
  trustProxyHops: 0,
  logLevel: "info",
  shutdownGraceSeconds: 10,
  auditCheckpointSeconds: 300,
  webhookAllowHttp: false,
  webhookRetryMaxSeconds: 600,
  webhookDisableAfterSeconds: 3 * 86_400,
  publicUrl: undefined,
  internalUrl: undefined,
  smtpUrl: undefined,
  mailFrom: undefined,
  daemonKeepaliveSeconds: 60,
  instanceLeaseSeconds: 30,
  workers: 1,
  outboundAllowNetworks: [],
  headersTimeoutSeconds: 20,
  bodyTimeoutSeconds: 30,
  maxConnectionsPerClient: 128,
  cliLoginMaxPendingPerAddress: 10,
  ...defaultWorkspaceQuotaConfig,
  console: true,
  otlpEndpoint: "",
  otlpTracesEndpoint: "",
  otelServiceName: "wap-server",
  ...defaultIntegrationConfig,
};

/** A setting that is missing, malformed or inconsistent; the message says which and how to fix it. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends object ? Mutable<T[K]> : T[K] };

interface Setting {
  readonly env: string;
  readonly flag: string;
  readonly value: string;
  readonly defaultText: string;
  readonly help: string;
  /** Value of the flag given with no argument. */
  readonly bare?: string;
  apply(config: Mutable<ServerConfig>, text: string, source: string): void;
}

type Parse<T> = (text: string, source: string) => T;

/** The `apply` of a setting that sets `key` to its value, as `parse` reads it. */
function assign<K extends keyof ServerConfig>(
  key: K,
  parse: Parse<Mutable<ServerConfig>[K]>,
): Setting["apply"] {
  return (config, text, source) => {
    config[key] = parse(text, source);
  };
}

const verbatim: Parse<string> = (text) => text;

/** Reads a whole number from `min` to `max`. */
const wholeNumber =
  (min: number, max: number): Parse<number> =>
  (text, source) =>
    integer(text, source, min, max);

/** Every setting, in `--help` order. */
export const settings: readonly Setting[] = [
  {
    env: "WAP_HOST",
    flag: "--host",
    value: "<address>",
    defaultText: "127.0.0.1",
    help: "Address to listen on (0.0.0.0 for every interface).",
    apply: assign("host", verbatim),
  },
  {
    env: "WAP_PORT",
    flag: "--port",
    value: "<port>",
    defaultText: "8080",
    help: "TCP port for everything: HTTP/1.1, h2c and, with TLS, HTTPS (0 picks a free port).",
    apply: assign("port", wholeNumber(0, 65535)),
  },
  {
    env: "WAP_DATA_DIR",
    flag: "--data-dir",
    value: "<dir>",
    defaultText: "./.wap-data",
    help: "Directory of the embedded SQLite database and the generated master key.",
    apply: assign("dataDir", verbatim),
  },
  {
    env: "WAP_DATABASE_URL",
    flag: "--database-url",
    value: "<url>",
    defaultText: "sqlite:<data dir>/wap.db",
    help: "Database: postgres://user:password@host:5432/db (several instances may share it), or sqlite:<path> (one instance).",
    apply: assign("databaseUrl", verbatim),
  },
  {
    env: "WAP_DATABASE_POOL_SIZE",
    flag: "--database-pool-size",
    value: "<n>",
    defaultText: "10",
    help: "PostgreSQL only: connections this instance may open for requests (the event bus adds 3 more).",
    apply: assign("databasePoolSize", wholeNumber(1, 1000)),
  },
  {
    env: "WAP_MASTER_KEY",
    flag: "--master-key",
    value: "<base64>",
    defaultText: "generated into <data dir>/master.key (SQLite only)",
    help: "32-byte master key (base64) sealing CA keys and signing keys; `wap-server master-key` prints a new one. Every instance over one PostgreSQL needs the same key. Prefer the env var or a key file: flags show in `ps`.",
    apply: assign("masterKey", verbatim),
  },
  {
    env: "WAP_MASTER_KEY_FILE",
    flag: "--master-key-file",
    value: "<file>",
    defaultText: "<data dir>/master.key",
    help: "File holding the base64 master key; on SQLite created (mode 0600) on first start if missing, on PostgreSQL it must exist.",
    apply: assign("masterKeyFile", verbatim),
  },
  {
    env: "WAP_PREVIOUS_MASTER_KEY",
    flag: "--previous-master-key",
    value: "<base64>",
    defaultText: "none",
    help: "During a master key rotation over several instances: the old key, still accepted for opening secrets while `rotate-master-key` re-seals them under WAP_MASTER_KEY (docs/operations.md).",
    apply: assign("previousMasterKey", verbatim),
  },
  {
    env: "WAP_PKCS11_MODULE",
    flag: "--pkcs11-module",
    value: "<file>",
    defaultText: "none (CA keys are software keys only)",
    help: "PKCS#11 library of the hardware token (HSM, SoftHSM, cloud KMS) that keeps the keys of authorities created with keyStorage KEY_STORAGE_PKCS11 (docs/certificates.md).",
    apply: assign("pkcs11Module", verbatim),
  },
  {
    env: "WAP_PKCS11_TOKEN_LABEL",
    flag: "--pkcs11-token-label",
    value: "<label>",
    defaultText: "none",
    help: "Label of the token in WAP_PKCS11_MODULE's library.",
    apply: assign("pkcs11TokenLabel", verbatim),
  },
  {
    env: "WAP_PKCS11_PIN",
    flag: "--pkcs11-pin",
    value: "<pin>",
    defaultText: "none",
    help: "User PIN of the token. Prefer the env var or WAP_PKCS11_PIN_FILE: flags show in `ps`.",
    apply: assign("pkcs11Pin", verbatim),
  },
  {
    env: "WAP_PKCS11_PIN_FILE",
    flag: "--pkcs11-pin-file",
    value: "<file>",
    defaultText: "none",
    help: "File holding the token's user PIN (a trailing newline is ignored).",
    apply: assign("pkcs11PinFile", verbatim),
  },
  {
    env: "WAP_DIAGNOSTICS_ADDRESS",
    flag: "--diagnostics-address",
    value: "<host:port>",
    defaultText: "none (off)",
    help: "Serve /metrics (Prometheus), /healthz and /readyz on this address, e.g. 127.0.0.1:9090; keep it off the public network.",
    apply: assign("diagnosticsAddress", listenAddress),
  },
  {
    env: "WAP_TLS_CERT",
    flag: "--tls-cert",
    value: "<file>",
    defaultText: "none (cleartext)",
    help: "PEM certificate chain. With --tls-key, the port serves TLS (h2 and http/1.1 by ALPN). SIGHUP reads both files again.",
    apply: assign("tlsCert", verbatim),
  },
  {
    env: "WAP_TLS_KEY",
    flag: "--tls-key",
    value: "<file>",
    defaultText: "none",
    help: "PEM private key of the TLS certificate.",
    apply: assign("tlsKey", verbatim),
  },
  {
    env: "WAP_RATE_LIMIT",
    flag: "--rate-limit",
    value: "<n>",
    defaultText: "600",
    help: "Requests per window per signed-in user, service account or daemon (0: unlimited).",
    apply: (c, t, s) => {
      c.rateLimit.authenticatedPoints = integer(t, s, 0, 1e9);
    },
  },
  {
    env: "WAP_RATE_LIMIT_ANONYMOUS",
    flag: "--rate-limit-anonymous",
    value: "<n>",
    defaultText: "120",
    help: "Requests per window per anonymous client address (IPv6: per /64; 0: unlimited).",
    apply: (c, t, s) => {
      c.rateLimit.anonymousPoints = integer(t, s, 0, 1e9);
    },
  },
  {
    env: "WAP_RATE_LIMIT_WINDOW",
    flag: "--rate-limit-window",
    value: "<seconds>",
    defaultText: "60",
    help: "Length of the rate-limit window.",
    apply: (c, t, s) => {
      c.rateLimit.windowSeconds = integer(t, s, 1, 86_400);
    },
  },
  {
    env: "WAP_BODY_LIMIT",
    flag: "--body-limit",
    value: "<bytes>",
    defaultText: "1mb",
    help: "Largest request message accepted (e.g. 1048576, 512kb, 2mb).",
    apply: assign("bodyLimitBytes", byteSize),
  },
  {
    env: "WAP_ALLOWED_ORIGINS",
    flag: "--allowed-origins",
    value: "<origins>",
    defaultText: "none",
    help: "Comma-separated origins (https://app.example.com) whose pages may make cookie-authenticated calls.",
    apply: assign("allowedOrigins", origins),
  },
  {
    env: "WAP_TRUST_PROXY",
    flag: "--trust-proxy",
    value: "[true|false|<hops>]",
    defaultText: "false",
    bare: "true",
    help: "Believe X-Forwarded-For/-Proto/-Host from this many proxies in front (true = 1).",
    apply: assign("trustProxyHops", trustProxy),
  },
  {
    env: "WAP_PUBLIC_URL",
    flag: "--public-url",
    value: "<url>",
    defaultText: "http://localhost:<port> (https with TLS)",
    help: "Where users reach this server or its web app: links in mails and the CLI login point here, and passkeys are bound to its host.",
    apply: assign("publicUrl", publicUrl),
  },
  {
    env: "WAP_INTERNAL_URL",
    flag: "--internal-url",
    value: "<url>",
    defaultText: "the URL this instance listens on",
    help: "Where the other instances over the same database reach this one (e.g. http://10.0.0.5:8080): a browser's terminal attaching through another instance is forwarded here when this instance holds the daemon's session stream.",
    apply: assign("internalUrl", publicUrl),
  },
  {
    env: "WAP_SMTP_URL",
    flag: "--smtp-url",
    value: "<url>",
    defaultText: "none: mails go to <data dir>/outbox (SQLite) or nowhere (PostgreSQL)",
    help: "Mail relay for account mails (verification, password reset): smtp://user:password@host:587 (STARTTLS when offered) or smtps://host:465. Needs --mail-from. Prefer the env var: flags show in `ps`.",
    apply: assign("smtpUrl", smtpUrl),
  },
  {
    env: "WAP_MAIL_FROM",
    flag: "--mail-from",
    value: "<address>",
    defaultText: "none (no-reply@localhost in the outbox)",
    help: 'Sender of account mails, e.g. no-reply@example.com or "Example" <no-reply@example.com>.',
    apply: (c, t, s) => {
      if (!/^[^\r\n]*@[^\r\n]+$/.test(t)) throw new ConfigError(`${s} must be an email address: got "${t}"`);
      c.mailFrom = t;
    },
  },
  {
    env: "WAP_DAEMON_KEEPALIVE_SECONDS",
    flag: "--daemon-keepalive",
    value: "<seconds>",
    defaultText: "60",
    help: "How often an idle daemon control stream gets an unsolicited HeartbeatAck (the agent ignores it), so that no proxy idle timeout cuts it. Keep it below every idle timeout in front of the server.",
    apply: assign("daemonKeepaliveSeconds", wholeNumber(1, 3600)),
  },
  {
    env: "WAP_INSTANCE_LEASE_SECONDS",
    flag: "--instance-lease",
    value: "<seconds>",
    defaultText: "30",
    help: "Lease of this instance on the daemon control streams it holds, renewed every third of it. If the instance dies without stopping, its daemons are reported offline within about 4/3 of this. Instances sharing a database need clocks within a few seconds of each other.",
    apply: assign("instanceLeaseSeconds", wholeNumber(3, 3600)),
  },
  {
    env: "WAP_WORKERS",
    flag: "--workers",
    value: "<n|auto>",
    defaultText: "1",
    help: "Server processes sharing the port, to use every core (auto: one per CPU). More than 1 needs PostgreSQL: the embedded SQLite database serves one process.",
    apply: assign("workers", workerCount),
  },
  {
    env: "WAP_HEADERS_TIMEOUT",
    flag: "--headers-timeout",
    value: "<seconds>",
    defaultText: "20",
    help: "A connection must send a request's headers within this time (and say its first word within it), or it is closed.",
    apply: assign("headersTimeoutSeconds", wholeNumber(1, 3600)),
  },
  {
    env: "WAP_BODY_TIMEOUT",
    flag: "--body-timeout",
    value: "<seconds>",
    defaultText: "30",
    help: "A request body must arrive whole within this time, or the request is cut (408 on HTTP/1.1, a reset stream on HTTP/2). Client and bidirectional streams (daemon streams) are not bounded by it.",
    apply: assign("bodyTimeoutSeconds", wholeNumber(1, 3600)),
  },
  {
    env: "WAP_MAX_CONNECTIONS_PER_CLIENT",
    flag: "--max-connections-per-client",
    value: "<n>",
    defaultText: "128",
    help: "Connections one client address may hold open at once; more are closed at once (0: no limit). Behind a proxy every client has the proxy's address: raise it or set 0 there, and let the proxy limit clients.",
    apply: assign("maxConnectionsPerClient", wholeNumber(0, 1_000_000)),
  },
  {
    env: "WAP_OUTBOUND_ALLOW_NETWORKS",
    flag: "--outbound-allow-networks",
    value: "<cidrs>",
    defaultText: "none",
    help: "Comma-separated networks (10.0.0.0/8, fd00::/8, 192.0.2.7) the server may fetch identity-provider documents from although they are not public. By default every loopback, private, link-local and unique-local address is refused, whatever name resolves to it.",
    apply: assign("outboundAllowNetworks", networks),
  },
  {
    env: "WAP_CLI_LOGIN_MAX_PENDING_PER_ADDRESS",
    flag: "--cli-login-max-pending-per-address",
    value: "<n>",
    defaultText: "10",
    help: "Most CLI logins that may wait for approval from one client address at once; more are refused (resource_exhausted) until one ends.",
    apply: assign("cliLoginMaxPendingPerAddress", wholeNumber(1, 10_000)),
  },
  {
    env: "WAP_WORKSPACE_MAX_DAEMONS",
    flag: "--workspace-max-daemons",
    value: "<n>",
    defaultText: String(defaultWorkspaceQuotaConfig.workspaceMaxDaemons),
    help: "Most daemons (enrolled or pending) one workspace may have; more enrolments are refused (resource_exhausted).",
    apply: assign("workspaceMaxDaemons", wholeNumber(0, 1_000_000)),
  },
  {
    env: "WAP_WORKSPACE_MAX_TARGETS",
    flag: "--workspace-max-targets",
    value: "<n>",
    defaultText: String(defaultWorkspaceQuotaConfig.workspaceMaxTargets),
    help: "Most targets one workspace may have, daemons' own targets included.",
    apply: assign("workspaceMaxTargets", wholeNumber(0, 1_000_000)),
  },
  {
    env: "WAP_WORKSPACE_MAX_SERVICE_ACCOUNTS",
    flag: "--workspace-max-service-accounts",
    value: "<n>",
    defaultText: String(defaultWorkspaceQuotaConfig.workspaceMaxServiceAccounts),
    help: "Most service accounts one workspace may have.",
    apply: assign("workspaceMaxServiceAccounts", wholeNumber(0, 1_000_000)),
  },
  {
    env: "WAP_WORKSPACE_MAX_RECORDING_BYTES",
    flag: "--workspace-max-recording-bytes",
    value: "<bytes>",
    defaultText: "10737418240 (10 GiB)",
    help: "Most bytes of session recordings one workspace may keep: recorded sessions are refused once it is reached, and a recording stops (truncated) where it would pass it.",
    apply: assign("workspaceMaxRecordingBytes", wholeNumber(0, Number.MAX_SAFE_INTEGER)),
  },
  {
    env: "WAP_WORKSPACE_MAX_OPEN_SESSIONS",
    flag: "--workspace-max-open-sessions",
    value: "<n>",
    defaultText: String(defaultWorkspaceQuotaConfig.workspaceMaxOpenSessions),
    help: "Most terminal sessions pending or open at once in one workspace.",
    apply: assign("workspaceMaxOpenSessions", wholeNumber(0, 1_000_000)),
  },
  {
    env: "WAP_CONSOLE",
    flag: "--console",
    value: "[true|false]",
    defaultText: "true",
    bare: "true",
    help: "Serve the web console at / on the same port (every GET that is not an API path).",
    apply: assign("console", boolean),
  },
  ...integrationSettings,
  {
    env: "WAP_LOG_LEVEL",
    flag: "--log-level",
    value: "<level>",
    defaultText: "info",
    help: `One of ${logLevels.join(", ")}. Logs are JSON lines on stderr; info logs every request.`,
    apply: (c, t, s) => {
      if (!(logLevels as readonly string[]).includes(t)) {
        throw new ConfigError(`${s} must be one of ${logLevels.join(", ")}: got "${t}"`);
      }
      c.logLevel = t as LogLevel;
    },
  },
  {
    env: "WAP_SHUTDOWN_GRACE",
    flag: "--shutdown-grace",
    value: "<seconds>",
    defaultText: "10",
    help: "On SIGTERM/SIGINT, how long open requests may run before they are cut.",
    apply: assign("shutdownGraceSeconds", wholeNumber(0, 3600)),
  },
  // OpenTelemetry's standard variables, so a collector's usual set-up applies unchanged.
  {
    env: "OTEL_EXPORTER_OTLP_ENDPOINT",
    flag: "--otlp-endpoint",
    value: "<url>",
    defaultText: "none",
    help: "OTLP/HTTP collector (e.g. http://otel-collector:4318): a span per RPC, per stream and per storage call is sent there. Unset: no tracing code is loaded.",
    apply: assign("otlpEndpoint", verbatim),
  },
  {
    env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    flag: "--otlp-traces-endpoint",
    value: "<url>",
    defaultText: "<otlp-endpoint>/v1/traces",
    help: "The collector's traces URL, when it is not under --otlp-endpoint (setting it alone turns tracing on).",
    apply: assign("otlpTracesEndpoint", verbatim),
  },
  {
    env: "OTEL_SERVICE_NAME",
    flag: "--otel-service-name",
    value: "<name>",
    defaultText: "wap-server",
    help: "The service name of the spans.",
    apply: assign("otelServiceName", verbatim),
  },
  {
    env: "WAP_AUDIT_CHECKPOINT_INTERVAL",
    flag: "--audit-checkpoint-interval",
    value: "<seconds>",
    defaultText: "300",
    help: "How often the heads of the workspaces' audit chains that moved are signed (0: only on export).",
    apply: assign("auditCheckpointSeconds", wholeNumber(0, 86_400)),
  },
  {
    env: "WAP_WEBHOOK_ALLOW_HTTP",
    flag: "--webhook-allow-http",
    value: "[true|false]",
    defaultText: "false",
    bare: "true",
    help: "Let webhook endpoints be plain http URLs (a receiver on a private network). By default they must be https. Which addresses they may reach is --outbound-allow-networks.",
    apply: assign("webhookAllowHttp", boolean),
  },
  {
    env: "WAP_WEBHOOK_RETRY_MAX",
    flag: "--webhook-retry-max",
    value: "<seconds>",
    defaultText: "600",
    help: "The longest wait between two attempts to deliver an event to a failing webhook endpoint (the wait doubles from 5 s up to it, with jitter).",
    apply: assign("webhookRetryMaxSeconds", wholeNumber(5, 86_400)),
  },
  {
    env: "WAP_WEBHOOK_DISABLE_AFTER",
    flag: "--webhook-disable-after",
    value: "<seconds>",
    defaultText: "259200",
    help: "A webhook endpoint that has failed for this long is disabled (audited as webhook.disable); an admin enables it again and delivery resumes where it stopped.",
    apply: assign("webhookDisableAfterSeconds", wholeNumber(60, 365 * 86_400)),
  },
];

/** What `wap-server` does: serve (the default), or one of the operator's tasks, then exit. */
export const commands = ["serve", "migrate", "master-key", "backup", "restore", "rotate-master-key"] as const;
export type Command = (typeof commands)[number];

/** The arguments of the commands that take a file. */
const commandFiles: Partial<Record<Command, { readonly flag: string; readonly value: string }>> = {
  backup: { flag: "--to", value: "<file>" },
  restore: { flag: "--from", value: "<file>" },
};

export interface ParsedCommandLine {
  readonly command: Command;
  readonly config: ServerConfig;
  readonly help: boolean;
  /** `--version`: print the version and exit. */
  readonly version: boolean;
  /** The file of `backup --to` or `restore --from`. */
  readonly file?: string;
}

/**
 * Reads the settings from the environment, then the command line (which wins).
 * @throws ConfigError for an unknown flag or a malformed value.
 */
/**
 * The flags as node:util's parseArgs reads them: settings that may stand alone (`--console`)
 * as booleans, whose value, if any, the loop below reads; every other one takes a value.
 */
const argumentOptions: ParseArgsConfig["options"] = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  ...Object.fromEntries(
    [...settings, ...Object.values(commandFiles)].map((s) => [
      s.flag.slice(2),
      { type: "bare" in s && s.bare !== undefined ? ("boolean" as const) : ("string" as const) },
    ]),
  ),
};

export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv = {}): ParsedCommandLine {
  const config = structuredClone(defaultConfig) as Mutable<ServerConfig>;
  for (const setting of settings) {
    const text = env[setting.env];
    if (text !== undefined && text !== "") setting.apply(config, text.trim(), setting.env);
  }
  const { tokens } = parseArgs({
    args: [...argv],
    options: argumentOptions,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  let help = false;
  let version = false;
  let file: string | undefined;
  let command: Command = "serve";
  const first = tokens[0];
  if (first?.kind === "positional" && first.index === 0) {
    if (!(commands as readonly string[]).includes(first.value)) {
      throw new ConfigError(
        `unknown command "${first.value}": use one of ${commands.join(", ")} (see --help)`,
      );
    }
    command = first.value as Command;
  }
  const fileArg = commandFiles[command];
  for (let i = command === "serve" && first?.kind !== "positional" ? 0 : 1; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === "option-terminator") throw new ConfigError('unknown argument "--" (see --help)');
    if (token.kind === "positional") throw new ConfigError(`unknown argument "${token.value}" (see --help)`);
    if (token.name === "help") {
      help = true;
      continue;
    }
    if (token.name === "version") {
      version = true;
      continue;
    }
    const flag = token.rawName;
    // A flag that takes a value never takes the next flag as its value.
    const given = token.inlineValue === true || !token.value?.startsWith("--") ? token.value : undefined;
    if (fileArg !== undefined && flag === fileArg.flag) {
      if (given === undefined || given === "")
        throw new ConfigError(`${flag} needs a file: ${flag} ${fileArg.value}`);
      file = given;
      continue;
    }
    const setting = settings.find((s) => s.flag === flag);
    if (!setting) throw new ConfigError(`unknown argument "${flag}" (see --help)`);
    let text = given;
    if (setting.bare !== undefined && text === undefined) {
      // `--console false` as well as `--console=false` and a bare `--console`.
      const next = tokens[i + 1];
      if (next?.kind === "positional" && next.index === token.index + 1) {
        text = next.value;
        i++;
      } else text = setting.bare;
    }
    if (text === undefined) throw new ConfigError(`${flag} needs a value: ${flag} ${setting.value}`);
    setting.apply(config, text.trim(), flag);
  }
  if (config.smtpUrl !== undefined && config.mailFrom === undefined) {
    throw new ConfigError(missingMailFrom);
  }
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    throw new ConfigError(
      "TLS needs both a certificate and a key: set WAP_TLS_CERT and WAP_TLS_KEY (or neither)",
    );
  }
  const tokenProblem = pkcs11ConfigProblem(config);
  if (tokenProblem !== undefined) throw new ConfigError(tokenProblem);
  const integrationProblem = integrationConfigProblem(config);
  if (integrationProblem !== undefined) throw new ConfigError(integrationProblem);
  if (fileArg !== undefined && file === undefined && !help && !version) {
    throw new ConfigError(`${command} needs ${fileArg.flag} ${fileArg.value} (see --help)`);
  }
  return { command, config, help, version, ...(file !== undefined && { file }) };
}

/** A token named in part: the module and label go together, with exactly one PIN source. */
function pkcs11ConfigProblem(config: ServerConfig): string | undefined {
  const { pkcs11Module, pkcs11TokenLabel, pkcs11Pin, pkcs11PinFile } = config;
  const any = [pkcs11Module, pkcs11TokenLabel, pkcs11Pin, pkcs11PinFile].some((v) => v !== undefined);
  if (!any) return undefined;
  if (pkcs11Module === undefined || pkcs11TokenLabel === undefined) {
    return "a PKCS#11 token needs both WAP_PKCS11_MODULE and WAP_PKCS11_TOKEN_LABEL";
  }
  if ((pkcs11Pin === undefined) === (pkcs11PinFile === undefined)) {
    return "a PKCS#11 token needs its PIN: set exactly one of WAP_PKCS11_PIN and WAP_PKCS11_PIN_FILE";
  }
  return undefined;
}

/** The `--help` text: two columns, the second starting past the longest option or command. */
export function helpText(): string {
  const commands: [string, string][] = [
    ["serve", "Migrate the database if needed, then serve (the default)."],
    ["migrate", "Bring the database schema up to date and exit."],
    ["master-key", "Print a new random master key (base64) and exit."],
    ["backup --to <file>", "Copy the embedded SQLite database consistently, also while a server runs."],
    ["restore --from <file>", "Put a backup in place of the embedded database (the server must be stopped)."],
    [
      "rotate-master-key",
      "Re-seal every secret under a new master key, in one transaction (docs/operations.md).",
    ],
  ];
  const flags: [string, string][] = [
    ["--version, -V", "Print the version and exit."],
    ["--help, -h", "Show this help and exit."],
  ];
  const lefts = [
    ...settings.map((s) => `${s.flag} ${s.value}`),
    ...commands.map(([left]) => left),
    ...flags.map(([left]) => left),
  ];
  const width = Math.max(...lefts.map((left) => left.length)) + 4;
  const row = (left: string, text: string) => `${`  ${left}`.padEnd(width)}${text}`;
  const rows = settings.map(
    (s) =>
      `${row(`${s.flag} ${s.value}`, s.help)}\n${"".padEnd(width)}env ${s.env}; default: ${s.defaultText}`,
  );
  return [
    "wap-server: the Workspace Access Platform API (Connect, gRPC, gRPC-Web and REST on one port)",
    "",
    "Usage: wap-server [command] [options]",
    "",
    "Commands:",
    ...commands.map(([left, text]) => row(left, text)),
    "",
    "Every option can also be set by its environment variable; a flag wins over the variable.",
    "",
    ...rows,
    ...flags.map(([left, text]) => row(left, text)),
    "",
  ].join("\n");
}

function integer(text: string, source: string, min: number, max: number): number {
  if (!/^\d+$/.test(text)) throw new ConfigError(`${source} must be a whole number: got "${text}"`);
  const value = Number(text);
  if (value < min || value > max)
    throw new ConfigError(`${source} must be between ${min} and ${max}: got ${value}`);
  return value;
}

function byteSize(text: string, source: string): number {
  const match = /^(\d+)\s*(b|kb|k|kib|mb|m|mib)?$/i.exec(text);
  if (!match) throw new ConfigError(`${source} must be a size such as 1048576, 512kb or 2mb: got "${text}"`);
  const unit = (match[2] ?? "b").toLowerCase();
  const factor = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 * 1024 : 1;
  const value = Number(match[1]) * factor;
  if (value < 1024 || value > 64 * 1024 * 1024) {
    throw new ConfigError(`${source} must be between 1kb and 64mb: got "${text}"`);
  }
  return value;
}

function origins(text: string, source: string): string[] {
  const list = text
    .split(",")
    .map((o) => o.trim())
    .filter((o) => o !== "");
  for (const origin of list) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new ConfigError(`${source}: "${origin}" is not an origin such as https://app.example.com`);
    }
    if (url.origin === "null" || url.pathname.length > 1 || url.search || url.hash) {
      throw new ConfigError(`${source}: "${origin}" must be an origin only (scheme://host[:port]), no path`);
    }
  }
  return list;
}

/** Also checked by `createServer`, which may be given settings that never went through here. */
export const missingMailFrom =
  "an SMTP relay needs a sender: set WAP_MAIL_FROM (--mail-from) along with WAP_SMTP_URL";

function publicUrl(text: string, source: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${source} must be an absolute URL such as https://wap.example.com: got "${text}"`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash || url.username) {
    throw new ConfigError(
      `${source} must be an http(s) URL without query, fragment or credentials: got "${text}"`,
    );
  }
  // Links are built as `<public url>/<path>`: no trailing slash.
  return url.toString().replace(/\/+$/, "");
}

function smtpUrl(text: string, source: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // The message must not repeat the text: it may hold the relay's password.
  }
  if (url === undefined || (url.protocol !== "smtp:" && url.protocol !== "smtps:") || url.hostname === "") {
    throw new ConfigError(`${source} must be an smtp:// or smtps:// URL with a host name`);
  }
  return text;
}

/** Most worker processes: far above any core count, low enough to catch a typo. */
export const maxWorkers = 256;

function workerCount(text: string, source: string): number {
  if (text.toLowerCase() === "auto") return Math.min(availableParallelism(), maxWorkers);
  return integer(text, source, 1, maxWorkers);
}

function networks(text: string, source: string): string[] {
  const list = text
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  try {
    parseNetworks(list);
  } catch (error) {
    throw new ConfigError(`${source}: ${(error as Error).message}`);
  }
  return list;
}

function listenAddress(text: string, source: string): string {
  if (parseListenAddress(text) === undefined) {
    throw new ConfigError(`${source} must be host:port, e.g. 127.0.0.1:9090 or [::1]:9090: got "${text}"`);
  }
  return text;
}

function boolean(text: string, source: string): boolean {
  const lowered = text.toLowerCase();
  if (["true", "yes", "on", "1"].includes(lowered)) return true;
  if (["false", "no", "off", "0"].includes(lowered)) return false;
  throw new ConfigError(`${source} must be true or false: got "${text}"`);
}

function trustProxy(text: string, source: string): number {
  const lowered = text.toLowerCase();
  if (["true", "yes", "on"].includes(lowered)) return 1;
  if (["false", "no", "off", ""].includes(lowered)) return 0;
  return integer(text, source, 0, 10);
}

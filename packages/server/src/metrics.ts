/**
 * Prometheus metrics of one server, served on the diagnostics listener (diagnostics.ts).
 *
 * Every name starts with `wap_`, carries its unit, and counters end in `_total`. Labels hold only
 * bounded values: the RPC (a procedure of the contract, or `none`), the protocol, the code, the
 * certificate kind and CA key type, the caller kind. Never an id, a path or an address.
 *
 * The request path pays one `performance.now()` at the start and, at the end, one map lookup of
 * the already-labelled series and an increment and an observation on them: prom-client's
 * label hashing runs once per series, not once per request.
 *
 * @module
 */
import type { PlatformObserver } from "@wap/core";
import type { IssuedCertificateKind } from "@wap/core/storage";
import { Counter, collectDefaultMetrics, Gauge, Histogram, type LabelValues, Registry } from "prom-client";

/** How a request reached the server. */
export type RequestProtocol = "connect" | "grpc" | "grpc_web" | "rest";

/** The connection pool of the database, as far as the backend has one. */
export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  readonly waiting: number;
}

/** Live counts read when the metrics are scraped. */
export interface MetricSources {
  readonly openControlStreams?: () => number;
  readonly openTerminalSessions?: () => number;
  readonly databasePool?: () => PoolStats | undefined;
}

export interface ServerMetrics extends PlatformObserver {
  readonly registry: Registry;
  readonly contentType: string;
  /** One finished request: `rpc` is a procedure path or undefined (no RPC was routed). */
  requestFinished(rpc: string | undefined, protocol: RequestProtocol, code: string, seconds: number): void;
  /** A request refused by the rate limit; `caller` is `anonymous` or `authenticated`. */
  rateLimited(caller: "anonymous" | "authenticated"): void;
  /** A request refused because the rate limiter's store failed. */
  rateLimiterFailed(): void;
  /** How long an event took from one instance's publish to this instance's delivery. */
  eventBusLag(seconds: number): void;
  /** Wires the live counts (streams, sessions, pool) once the parts that hold them exist. */
  setSources(sources: MetricSources): void;
  /** The text exposition. */
  render(): Promise<string>;
}

// From 1 ms to 10 s: unary calls; longer streams land in +Inf.
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const lagBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "wap_" });
  let sources: MetricSources = {};

  const requests = new Counter({
    name: "wap_rpc_requests_total",
    help: "Requests answered, by RPC (procedure path, or none), protocol and code.",
    labelNames: ["rpc", "protocol", "code"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "wap_rpc_request_duration_seconds",
    help: "Time from a request's arrival to its response's end, by RPC and protocol.",
    labelNames: ["rpc", "protocol"] as const,
    buckets: latencyBuckets,
    registers: [registry],
  });
  const certificates = new Counter({
    name: "wap_certificates_issued_total",
    help: "Certificates issued, by kind (ssh_user, ssh_host, x509) and the signing CA's key type.",
    labelNames: ["kind", "ca_key_type"] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: "wap_rate_limit_refusals_total",
    help: "Requests refused by the rate limit, by caller kind (anonymous, authenticated), or because its store failed (store_unavailable).",
    labelNames: ["caller"] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: "wap_event_bus_lag_seconds",
    help: "Time from an instance publishing a probe event to this instance receiving it (includes clock skew between instances).",
    buckets: lagBuckets,
    registers: [registry],
  });
  new Gauge({
    name: "wap_daemon_control_streams_open",
    help: "Daemon control streams open on this instance.",
    registers: [registry],
    collect() {
      this.set(sources.openControlStreams?.() ?? 0);
    },
  });
  new Gauge({
    name: "wap_terminal_sessions_open",
    help: "Terminal sessions relayed by this instance.",
    registers: [registry],
    collect() {
      this.set(sources.openTerminalSessions?.() ?? 0);
    },
  });
  new Gauge({
    name: "wap_database_pool_connections",
    help: "Connections of the PostgreSQL pool, by state (idle, in_use); absent on SQLite.",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const stats = sources.databasePool?.();
      if (stats === undefined) return;
      this.set({ state: "idle" }, stats.idle);
      this.set({ state: "in_use" }, stats.total - stats.idle);
    },
  });
  new Gauge({
    name: "wap_database_pool_waiting_requests",
    help: "Queries waiting for a free connection of the PostgreSQL pool; absent on SQLite.",
    registers: [registry],
    collect() {
      const stats = sources.databasePool?.();
      if (stats !== undefined) this.set(stats.waiting);
    },
  });

  // The labelled series of each (rpc, protocol, code), made once.
  const series = new Map<
    string,
    { count: Counter.Internal; duration: Histogram.Internal<"rpc" | "protocol"> }
  >();
  const durations = new Map<string, Histogram.Internal<"rpc" | "protocol">>();
  const seriesOf = (rpc: string, protocol: RequestProtocol, code: string) => {
    const key = `${rpc} ${protocol} ${code}`;
    let found = series.get(key);
    if (found === undefined) {
      const durationKey = `${rpc} ${protocol}`;
      let duration = durations.get(durationKey);
      if (duration === undefined) {
        duration = latency.labels({ rpc, protocol } as LabelValues<"rpc" | "protocol">);
        durations.set(durationKey, duration);
      }
      found = { count: requests.labels({ rpc, protocol, code }), duration };
      series.set(key, found);
    }
    return found;
  };

  return {
    registry,
    contentType: registry.contentType,
    requestFinished(rpc, protocol, code, seconds) {
      const found = seriesOf(rpc ?? "none", protocol, code);
      found.count.inc();
      found.duration.observe(seconds);
    },
    certificateIssued(kind: IssuedCertificateKind, caKeyType: string) {
      certificates.inc({ kind, ca_key_type: caKeyType });
    },
    rateLimited(caller) {
      refusals.inc({ caller });
    },
    rateLimiterFailed() {
      refusals.inc({ caller: "store_unavailable" });
    },
    eventBusLag(seconds) {
      lag.observe(Math.max(0, seconds));
    },
    setSources(next) {
      sources = { ...sources, ...next };
    },
    render: () => registry.metrics(),
  };
}

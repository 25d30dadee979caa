/**
 * OpenTelemetry traces: a span per RPC and per stream (from its opening to its end, with the code
 * it ended with) and, under them, a span per storage call, exported over OTLP/HTTP. On only when the
 * `otlpEndpoint` or `otlpTracesEndpoint` setting is set (the standard `OTEL_EXPORTER_OTLP_ENDPOINT`
 * and `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` in the settings table); otherwise the SDK is never loaded
 * and the request path checks one `undefined`. The exporter reads the other standard variables
 * itself (`OTEL_EXPORTER_OTLP_HEADERS`, timeouts).
 *
 * @module
 */
import type { Storage } from "@wap/core/storage";
import type { ServerConfig } from "./config.js";
import type { Logger } from "./logger.js";

type Api = typeof import("@opentelemetry/api");
type Span = import("@opentelemetry/api").Span;
type Tracer = import("@opentelemetry/api").Tracer;

export interface Tracing {
  /** Runs `work` inside a span named after the RPC; the span ends with its outcome. */
  rpc<T>(procedure: string, attributes: Readonly<Record<string, string>>, work: () => Promise<T>): Promise<T>;
  /**
   * Opens the span of a stream (a streaming RPC, the terminal WebSocket); the caller ends it.
   * `name` is a procedure path (`/pkg.Service/Method`) or a bounded name such as `terminal`.
   */
  stream(name: string, attributes: Readonly<Record<string, string>>): StreamSpan;
  /** The storage, with a span for each call made under an RPC's span. */
  instrumentStorage(storage: Storage, system: "sqlite" | "postgresql"): Storage;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** The span of one open stream. */
export interface StreamSpan {
  /** A significant moment of the stream: a name from a fixed set; attributes may carry ids. */
  event(name: string, attributes?: Readonly<Record<string, string | number>>): void;
  /** Attributes learnt while the stream runs (the daemon, the session). */
  annotate(attributes: Readonly<Record<string, string | number>>): void;
  /** Runs `work` with this span active: storage calls made from it are its children. */
  within<T>(work: () => T): T;
  /**
   * Ends the span with the code the stream ended with (`ok`, `canceled` when the client left,
   * or the error's code); later calls do nothing.
   */
  end(code: string): void;
}

/** The settings tracing reads. */
export type TracingSettings = Pick<ServerConfig, "otlpEndpoint" | "otlpTracesEndpoint" | "otelServiceName">;

/** Whether the settings ask for traces. */
export function tracingRequested(settings: TracingSettings): boolean {
  return Boolean(settings.otlpEndpoint || settings.otlpTracesEndpoint);
}

/** Loads the SDK and starts exporting, or returns undefined when traces are not asked for. */
export async function startTracing(settings: TracingSettings, logger: Logger): Promise<Tracing | undefined> {
  if (!tracingRequested(settings)) return undefined;
  const [api, base, exporterModule, resources, contextModule] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/context-async-hooks"),
  ]);
  // Spans of storage calls find their RPC's span through the active context.
  api.context.setGlobalContextManager(new contextModule.AsyncLocalStorageContextManager().enable());
  // As the OTLP specification derives it: the traces path under the base endpoint.
  const url = settings.otlpTracesEndpoint || `${settings.otlpEndpoint.replace(/\/+$/, "")}/v1/traces`;
  const provider = new base.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ "service.name": settings.otelServiceName || "wap-server" }),
    spanProcessors: [new base.BatchSpanProcessor(new exporterModule.OTLPTraceExporter({ url }))],
  });
  const tracer = provider.getTracer("@wap/server");
  logger.info("exporting traces over OTLP/HTTP", {
    endpoint: settings.otlpTracesEndpoint || settings.otlpEndpoint,
  });
  return {
    rpc(procedure, attributes, work) {
      return tracer.startActiveSpan(
        procedure.slice(1),
        { kind: api.SpanKind.SERVER, attributes: { ...procedureAttributes(procedure), ...attributes } },
        (span) => settle(api, span, work),
      );
    },
    stream(name, attributes) {
      const span = tracer.startSpan(name.replace(/^\//, ""), {
        kind: api.SpanKind.SERVER,
        attributes: { ...procedureAttributes(name), ...attributes },
      });
      const active = api.trace.setSpan(api.context.active(), span);
      let ended = false;
      return {
        event: (eventName, eventAttributes) => span.addEvent(eventName, eventAttributes),
        annotate: (more) => span.setAttributes(more),
        within: (work) => api.context.with(active, work),
        end(code) {
          if (ended) return;
          ended = true;
          span.setAttribute("wap.stream.code", code);
          // The client leaving is how most streams end: not an error of the server's.
          if (code !== "ok" && code !== "canceled") {
            span.setAttribute("rpc.connect_rpc.error_code", code);
            span.setStatus({ code: api.SpanStatusCode.ERROR, message: code });
          }
          span.end();
        },
      };
    },
    instrumentStorage: (storage, system) => instrumentStorage(api, tracer, storage, system),
    async shutdown() {
      await provider
        .shutdown()
        .catch((error: unknown) =>
          logger.warn("traces could not be sent at shutdown", { error: String(error) }),
        );
    },
  };
}

/** The semantic-convention attributes of a procedure path; none for other stream names. */
function procedureAttributes(name: string): Record<string, string> {
  const [service, method] = name.slice(1).split("/");
  if (!name.startsWith("/") || service === undefined || method === undefined) return {};
  return { "rpc.system": "connect_rpc", "rpc.service": service, "rpc.method": method };
}

async function settle<T>(api: Api, span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: typeof code === "string" ? code : "error" });
    if (typeof code === "string") span.setAttribute("rpc.connect_rpc.error_code", code);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Wraps every repository method, `transaction`, `append` and `ping` in a span, but only under an
 * active span (an RPC): background work (leases, sweeps) makes no orphan spans.
 */
function instrumentStorage(api: Api, tracer: Tracer, storage: Storage, system: string): Storage {
  const traced =
    <A extends unknown[], R>(name: string, call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      if (api.trace.getSpan(api.context.active()) === undefined) return call(...args);
      return tracer.startActiveSpan(
        `storage ${name}`,
        { kind: api.SpanKind.CLIENT, attributes: { "db.system": system, "db.operation": name } },
        (span) => settle(api, span, () => call(...args)),
      );
    };
  // Each repository (`storage.users`, `tx.daemons`) is a proxy whose methods make spans.
  const repositories = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (
          typeof key !== "string" ||
          value === null ||
          typeof value !== "object" ||
          key === "capabilities"
        ) {
          return value;
        }
        return new Proxy(value as Record<string, unknown>, {
          get(repository, method, inner) {
            const fn = Reflect.get(repository, method, inner);
            if (typeof method !== "string" || typeof fn !== "function") return fn;
            return traced(
              `${key}.${method}`,
              (...args: unknown[]) => fn.apply(repository, args) as Promise<unknown>,
            );
          },
        });
      },
    });
  const transaction: Storage["transaction"] = (fn) =>
    traced("transaction", () => storage.transaction((tx) => fn(repositories(tx))))();
  return Object.assign(Object.create(repositories(storage)) as Storage, {
    transaction,
    append: traced("append", (unit: Parameters<Storage["append"]>[0]) => storage.append(unit)),
    ping: () => storage.ping(),
    close: () => storage.close(),
  });
}

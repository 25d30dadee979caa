/**
 * The Node request handler of the one port: every request passes the edge, then goes to
 * connect-node (procedure paths: Connect, gRPC, gRPC-Web; gRPC-Web text is turned into binary
 * gRPC-Web on arrival, grpc-web-text.ts) or, for anything else, to the Hono app
 * (REST, probes). Hono must not sit in front of gRPC, whose trailers its fetch adapter
 * drops. Each request is logged as one JSON line when its response closes.
 *
 * @module
 */
import { setMaxListeners } from "node:events";
import type http from "node:http";
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { getRequestListener } from "@hono/node-server";
import { Health, platformServices, ServerReflection } from "@wap/api";
import type { Caller, ErrorCode } from "@wap/core";
import { genericReason, procedureOf } from "@wap/core/internal";
import { type AppSettings, createApp, probePaths, withTimeout } from "./app.js";
import { connectContextValues } from "./connect-context.js";
import { checkJsonRequestsFirst, jsonRefusals } from "./connect-json-requests.js";
import { registerConnectRoutes } from "./connect-routes.js";
import { isApiPath } from "./console-assets.js";
import { applyCors } from "./cors.js";
import { admitRequest, type EdgeRequest, edgeOf, type ProcedureResolver, subjectIdOf } from "./edge.js";
import { errorStatusJson, publicError } from "./error-responses.js";
import { registerHealth } from "./grpc-services/health.js";
import { registerReflection, serverReflectionV1alpha } from "./grpc-services/reflection.js";
import { isGrpcWebText, serveAsGrpcWebBinary } from "./grpc-web-text.js";
import { controlStreamPath, serveControlStream } from "./lean/control-connect.js";
import { createUnaryConnectPath } from "./lean/unary-connect.js";
import type { NodeHandler } from "./listener.js";
import type { Logger } from "./logger.js";
import type { RequestProtocol, ServerMetrics } from "./metrics.js";
import { isProcedurePath } from "./procedure-path.js";
import { createRestRoutes, type RestRoutes } from "./rest/index.js";
import { sendStreamHeadersEarly } from "./stream-headers.js";
import { attachStreamSpan, streamSpanOpener } from "./stream-spans.js";
import type { StreamSpan } from "./tracing.js";
import { answerUndecodableAsInvalidArgument, undecodableRequests } from "./undecodable-requests.js";
import { answerUnknownProcedure } from "./unknown-procedure.js";

/** Every service served, as health checking and reflection name them. */
const discoverable = [...platformServices, Health, ServerReflection, serverReflectionV1alpha];

/** The procedures this port serves: the only paths a request's `rpc` (a metrics label) may be. */
const servedProcedures: ReadonlySet<string> = new Set(
  discoverable.flatMap((service) => service.methods.map(procedureOf)),
);

/** Builds the handler the listener serves. */

/**
 * connect-node's interceptors. The lean unary path (lean/unary-connect.ts) does the same work its
 * own way and lists what it covers; a test fails when one is added here and not there.
 */
export const connectInterceptors = [jsonRefusals, undecodableRequests] as const;
export function createRequestHandler(settings: AppSettings): NodeHandler {
  const routes = createRestRoutes(platformServices);
  const app = createApp(settings, routes);
  const resolveProcedure = restProcedureResolver(routes);
  const fallback = getRequestListener(app.fetch);
  const shutdown = new AbortController();
  // connect-node and the REST calls listen on these once per call in flight, and on `closing`
  // once per open stream: many listeners are the normal case, not a leak.
  setMaxListeners(0, shutdown.signal, settings.shutdownSignal);
  if (settings.edge.closing) setMaxListeners(0, settings.edge.closing);
  settings.shutdownSignal.addEventListener(
    "abort",
    () => shutdown.abort(new ConnectError("the server is shutting down; retry", Code.Unavailable)),
    { once: true },
  );
  // The contract rejects unknown fields (spec §1.5); connect-node ignores them unless told. JSON
  // that is not UTF-8 is refused (connect-es would read it with U+FFFD in place of bad bytes).
  const jsonOptions = { ignoreUnknownFields: false, textDecoder: strictUtf8 };
  const connect = connectNodeAdapter({
    routes: (router) => {
      registerConnectRoutes(router, settings.edge);
      registerHealth(router, {
        ping: () => withTimeout(settings.storage.ping(), 2_000),
        closing: settings.edge.closing,
        services: discoverable.map((service) => service.typeName),
      });
      registerReflection(router, discoverable);
      answerUndecodableAsInvalidArgument(router);
      checkJsonRequestsFirst(router, settings.bodyLimitBytes);
      sendStreamHeadersEarly(router);
    },
    interceptors: [...connectInterceptors],
    fallback: (req, res) => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      if (answerUnknownProcedure(req, res as Parameters<typeof fallback>[1], path, edgeOf(req))) return;
      void fallback(req, res as Parameters<typeof fallback>[1]);
    },
    contextValues: connectContextValues,
    readMaxBytes: settings.bodyLimitBytes,
    jsonOptions,
    shutdownSignal: shutdown.signal,
    // Deadlines beyond a timer's range (24.8 days) would fire at once; they are refused instead.
    // The agent's 8 h session streams (28 800 000 ms) are well inside.
    maxTimeoutMs: 2 ** 31 - 1,
  });
  const serveUnary = createUnaryConnectPath({
    edge: settings.edge,
    readMaxBytes: settings.bodyLimitBytes,
    jsonOptions,
    shutdown: shutdown.signal,
  });
  const { logger, metrics } = settings.edge;
  // Decided once: with request lines off (below info), no request pays for gathering them.
  const logRequests = logger.enabled?.("info") ?? true;
  const logProbes = logger.enabled?.("debug") ?? true;
  const observe = observerOf(logRequests ? logger : undefined, metrics);
  const observeProbe = logProbes ? observerOf(logger, undefined) : undefined;

  const openStreamSpan = settings.edge.tracing && streamSpanOpener(settings.edge.tracing, resolveProcedure);

  /** Runs the edge, then hands the request to connect-node (which falls back to Hono). */
  async function admitThenRoute(
    req: Parameters<NodeHandler>[0],
    res: Parameters<NodeHandler>[1],
    path: string,
    streamSpan: StreamSpan | undefined,
  ) {
    try {
      const edge = await admitRequest(req, res, settings.edge, resolveProcedure);
      // Named here too, for requests that connect-node refuses before any handler runs.
      if (servedProcedures.has(path)) edge.rpc = path;
      if (streamSpan) attachStreamSpan(edge, streamSpan);
      // Daemon control streams as the agent opens them take a leaner path (lean/control-connect.ts).
      if (path === controlStreamPath && serveControlStream(req, res, edge, settings.edge)) return;
      // Unary calls as Connect clients usually send them, too (lean/unary-connect.ts).
      if (serveUnary(req, res, edge, path)) return;
    } catch (error) {
      // admitRequest never throws by contract; answer 500 rather than hang if it ever does.
      logger.error("request edge failed", { error: String(error) });
      if (!res.headersSent) (res as http.ServerResponse).writeHead(500);
      res.end();
      return;
    }
    connect(req, res);
  }

  const bodyTimeoutMs = settings.bodyTimeoutMs ?? 30_000;
  const clientStreams = clientStreamPaths();

  return (req, res) => {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const probe = probePaths.has(path);
    (probe ? observeProbe : observe)?.(req, res, path);
    if (req.method !== "GET" && req.method !== "HEAD") {
      if (req.httpVersionMajor === 1) keepUnreadBodyDrainable(req as http.IncomingMessage, res);
      // A client stream's body is the stream itself: it has no end to wait for.
      if (!clientStreams.has(path)) boundBodyTime(req, res, bodyTimeoutMs, logger);
      // gRPC-Web text is served as binary gRPC-Web from here on, its answers encoded back.
      if (isGrpcWebText(req.headers["content-type"])) serveAsGrpcWebBinary(req, res);
    }
    if (applyCors(req, res as Parameters<typeof applyCors>[1], settings.edge.allowedOrigins)) return;
    if (probe && req.method === "GET") {
      void fallback(req, res);
      return;
    }
    // What a machine installs from: anonymous (it has no credentials yet), before the edge.
    if (settings.install && (req.method === "GET" || req.method === "HEAD") && path.startsWith("/install/")) {
      settings.install.serve(req, res, path);
      return;
    }
    // The console's pages and files: before the edge, so they cost no rate-limit budget.
    if (settings.console && (req.method === "GET" || req.method === "HEAD") && !isApiPath(path)) {
      settings.console.serve(req, res, path);
      return;
    }
    const streamSpan = openStreamSpan?.(req.method ?? "GET", path);
    if (streamSpan === undefined) {
      void admitThenRoute(req, res, path, undefined);
      return;
    }
    res.once("close", () => streamSpan.end(answeredCode(edgeOf(req), res)));
    streamSpan.within(() => void admitThenRoute(req, res, path, streamSpan));
  };
}

/**
 * A response can be sent before its request's body was read to the end (connect-node refuses an
 * oversized gRPC-Web message as soon as it reads its length, and stops reading). On HTTP/1.1 the
 * rest of the body then sits in front of the next request the client sends on the connection,
 * which hangs until the connection times out. So a reader that stops early must not destroy the
 * request, and what it left is read out once the response is sent, as Node does for bodies
 * nobody started to read.
 */
function keepUnreadBodyDrainable(req: http.IncomingMessage, res: Parameters<NodeHandler>[1]): void {
  req[Symbol.asyncIterator] = () => req.iterator({ destroyOnReturn: false });
  res.once("finish", () => {
    if (req.complete || req.destroyed) return;
    const discard = () => {
      while (req.read() !== null);
    };
    req.on("readable", discard);
    discard();
  });
}

/**
 * A UTF-8 decoder that refuses malformed input with a message naming the problem; connect-es
 * answers what its JSON decoder throws as `invalid_argument`, on every protocol and both paths.
 */
const strictUtf8 = (() => {
  const fatal = new TextDecoder("utf-8", { fatal: true });
  const decoder = Object.create(fatal) as InstanceType<typeof TextDecoder>;
  decoder.decode = (...args: Parameters<typeof fatal.decode>) => {
    try {
      return fatal.decode(...args);
    } catch {
      throw new ConnectError("the request message is not valid UTF-8 JSON", Code.InvalidArgument);
    }
  };
  return decoder;
})();

/** The procedure paths whose request body is a stream of messages (client and bidi streams). */
function clientStreamPaths(): ReadonlySet<string> {
  const paths = new Set<string>();
  for (const service of platformServices) {
    for (const method of service.methods) {
      if (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming") {
        paths.add(procedureOf(method));
      }
    }
  }
  return paths;
}

/**
 * Cuts a request whose body has not arrived whole within `timeoutMs`, on either HTTP version (a
 * client trickling a body must not hold a stream or a connection). HTTP/1.1 gets a 408 and the
 * connection is closed; an HTTP/2 stream is reset.
 */
function boundBodyTime(
  req: Parameters<NodeHandler>[0],
  res: Parameters<NodeHandler>[1],
  timeoutMs: number,
  logger: Logger,
): void {
  if (req.complete) return;
  const timer = setTimeout(() => {
    if (req.complete) return;
    logger.info("request body too slow; request cut", { path: req.url?.split("?", 1)[0], timeoutMs });
    const message = `the request body did not arrive within ${timeoutMs} ms`;
    const body = JSON.stringify(
      errorStatusJson(publicError("deadline_exceeded", message, genericReason("deadline_exceeded"))),
    );
    if (req.httpVersionMajor === 1) {
      const h1 = res as http.ServerResponse;
      if (!h1.headersSent) {
        h1.writeHead(408, { Connection: "close", "Content-Type": "application/json" });
        h1.end(body);
      }
      req.socket.destroySoon?.();
      setTimeout(() => req.socket.destroy(), 1_000).unref();
    } else {
      const h2 = res as http2.Http2ServerResponse;
      if (!h2.headersSent) {
        h2.writeHead(408, { "content-type": "application/json" });
        h2.end(body);
      }
      // Nothing more is read from it.
      h2.stream.close(http2.constants.NGHTTP2_CANCEL);
    }
  }, timeoutMs);
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once("end", done);
  res.once("close", done);
}

type Observe = (req: Parameters<NodeHandler>[0], res: Parameters<NodeHandler>[1], path: string) => void;

/**
 * What happens when a response closes: one JSON line (at info; probes at debug) and the request
 * metrics. Undefined when neither is wanted, so that such requests pay nothing.
 */
function observerOf(logger: Logger | undefined, metrics: ServerMetrics | undefined): Observe | undefined {
  if (logger === undefined && metrics === undefined) return undefined;
  return (req, res, path) => {
    const started = performance.now();
    res.once("close", () => {
      const edge = edgeOf(req);
      const code = answeredCode(edge, res);
      const ms = performance.now() - started;
      metrics?.requestFinished(edge?.rpc, protocolOf(req, path), code, ms / 1000);
      if (logger === undefined) return;
      const caller = edge?.caller;
      const fields = {
        method: req.method,
        path: redactPath(path),
        rpc: edge?.rpc,
        status: res.statusCode,
        code,
        reason: edge?.reason,
        ms: Math.round(ms * 10) / 10,
        requestId: edge?.requestId,
        protocol: `HTTP/${req.httpVersion}`,
        client: edge?.ipAddress ?? req.socket?.remoteAddress,
        userAgent: edge?.userAgent,
        subject: caller?.kind,
        subjectId: caller === undefined ? undefined : subjectIdOf(caller),
        workspaceId: edge?.workspaceId ?? workspaceOf(caller),
      };
      if (probePaths.has(path)) logger.debug("request", fields);
      else logger.info("request", fields);
    });
  };
}

/** The code a request ended with: its handler's, else what its response says. */
function answeredCode(edge: EdgeRequest | undefined, res: Parameters<NodeHandler>[1]): ErrorCode | "ok" {
  // A response closed before it ended: the client left (a reset stream, a dropped socket).
  return edge?.code ?? (res.writableEnded ? codeFromStatus(res.statusCode) : "canceled");
}

function workspaceOf(caller: Caller | undefined): string | undefined {
  return caller !== undefined && "workspaceId" in caller ? caller.workspaceId : undefined;
}

/** Which wire protocol a request spoke: gRPC and gRPC-Web by content type, Connect by path. */
function protocolOf(req: Parameters<NodeHandler>[0], path: string): RequestProtocol {
  if (!isProcedurePath(path)) return "rest";
  const type = req.headers["content-type"];
  if (type?.startsWith("application/grpc-web")) return "grpc_web";
  if (type?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** The RPC a REST path is routed to, for the `Platform` challenges signed over its procedure. */
function restProcedureResolver(routes: RestRoutes): ProcedureResolver {
  return (httpMethod, path) => {
    try {
      const match = routes.match(httpMethod.toUpperCase(), path);
      return match !== null && "method" in match ? procedureOf(match.method) : undefined;
    } catch {
      // A malformed path variable: the REST app answers it; the challenge just cannot match.
      return undefined;
    }
  };
}

/** Invite tokens travel in REST paths; they must not reach the logs. */
function redactPath(path: string): string {
  return path.replace(/^\/v1\/invites\/[^/]+/, "/v1/invites/{token}");
}

/** The code of an answer whose error the server did not translate itself (protocol-level errors). */
function codeFromStatus(status: number): ErrorCode | "ok" {
  if (status < 400) return "ok";
  return codesByStatus[status] ?? (status >= 500 ? "internal" : "unknown");
}

const codesByStatus: Readonly<Record<number, ErrorCode>> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "not_found",
  408: "deadline_exceeded",
  409: "aborted",
  413: "resource_exhausted",
  415: "invalid_argument",
  429: "resource_exhausted",
  499: "canceled",
  501: "unimplemented",
  503: "unavailable",
  504: "deadline_exceeded",
};

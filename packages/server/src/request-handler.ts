/**
 * The Node request handler of the one port: every request passes the edge, then goes to
 * connect-node (procedure paths: Connect, gRPC, gRPC-Web) or, for anything else, to the Hono app
 * (REST, probes). STACK.md: Hono must not sit in front of gRPC, whose trailers its fetch adapter
 * drops. Each request is logged as one JSON line when its response closes.
 *
 * @module
 */
import type http from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { getRequestListener } from "@hono/node-server";
import type { ErrorCode } from "@wap/core";
import { type AppSettings, createApp, probePaths } from "./app.js";
import { connectContextValues, registerConnectRoutes } from "./connect-routes.js";
import { applyCors } from "./cors.js";
import { admitRequest, edgeOf } from "./edge.js";
import type { NodeHandler } from "./listener.js";

/** Builds the handler the listener serves. */
export function createRequestHandler(settings: AppSettings): NodeHandler {
  const app = createApp(settings);
  const fallback = getRequestListener(app.fetch);
  const shutdown = new AbortController();
  settings.shutdownSignal.addEventListener(
    "abort",
    () => shutdown.abort(new ConnectError("the server is shutting down; retry", Code.Unavailable)),
    { once: true },
  );
  const connect = connectNodeAdapter({
    routes: (router) => registerConnectRoutes(router, settings.edge),
    fallback: (req, res) => void fallback(req, res as Parameters<typeof fallback>[1]),
    contextValues: connectContextValues,
    readMaxBytes: settings.bodyLimitBytes,
    // The contract rejects unknown fields (spec §1.5); connect-node ignores them unless told.
    jsonOptions: { ignoreUnknownFields: false },
    shutdownSignal: shutdown.signal,
  });
  const { logger } = settings.edge;

  return (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    res.once("close", () => {
      const edge = edgeOf(req);
      const fields = {
        method: req.method,
        path: redactPath(path),
        rpc: edge?.rpc,
        status: res.statusCode,
        code: edge?.code ?? codeFromStatus(res.statusCode),
        ms: Math.round((performance.now() - started) * 10) / 10,
        requestId: edge?.requestId,
        protocol: `HTTP/${req.httpVersion}`,
      };
      if (probePaths.has(path)) logger.debug("request", fields);
      else logger.info("request", fields);
    });
    if (applyCors(req, res as Parameters<typeof applyCors>[1], settings.edge.allowedOrigins)) return;
    if (probePaths.has(path) && req.method === "GET") {
      void fallback(req, res);
      return;
    }
    admitRequest(req, res, settings.edge).then(
      (edge) => {
        // Named here too, for requests that connect-node refuses before any handler runs.
        if (procedurePath.test(path)) edge.rpc = path;
        connect(req, res);
      },
      (error: unknown) => {
        // admitRequest never throws by contract; answer 500 rather than hang if it ever does.
        logger.error("request edge failed", { error: String(error) });
        if (!res.headersSent) (res as http.ServerResponse).writeHead(500);
        res.end();
      },
    );
  };
}

const procedurePath = /^\/platform\.v1\.[A-Za-z]+\/[A-Za-z]+$/;

/** Invite tokens travel in REST paths; they must not reach the logs. */
function redactPath(path: string): string {
  return path.replace(/^\/v1\/invites\/[^/]+/, "/v1/invites/{token}");
}

/** The code of an answer whose error the server did not translate itself (protocol-level errors). */
function codeFromStatus(status: number): ErrorCode | "ok" {
  if (status < 400) return "ok";
  const byStatus: Record<number, ErrorCode> = {
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
  return byStatus[status] ?? (status >= 500 ? "internal" : "unknown");
}

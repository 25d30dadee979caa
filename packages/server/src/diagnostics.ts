/**
 * The diagnostics listener (`WAP_DIAGNOSTICS_ADDRESS`, off by default): `/metrics` (Prometheus
 * text), `/healthz` and `/readyz`, on an address of their own so that the metrics are never
 * exposed on the public port. Plain HTTP/1.1; no credentials, no rate limit.
 *
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ServerMetrics } from "./metrics.js";

export interface DiagnosticsOptions {
  readonly host: string;
  readonly port: number;
  readonly metrics: ServerMetrics;
  /** Resolves when the database answers; rejects otherwise. */
  readonly ready: () => Promise<void>;
}

export interface DiagnosticsListener {
  /** e.g. `http://127.0.0.1:9090`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function listenDiagnostics(options: DiagnosticsOptions): Promise<DiagnosticsListener> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("method not allowed\n");
      return;
    }
    if (path === "/metrics") {
      options.metrics.render().then(
        (text) => res.writeHead(200, { "content-type": options.metrics.contentType }).end(text),
        (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
      );
    } else if (path === "/healthz") {
      json(res, 200, { status: "ok" });
    } else if (path === "/readyz") {
      options.ready().then(
        () => json(res, 200, { status: "ready" }),
        () => json(res, 503, { status: "unavailable" }),
      );
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: /metrics, /healthz, /readyz\n");
    }
  });
  // Scrapers keep connections open; a stopping server must not wait for them.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** Reads `host:port` (`[::1]:9090` for IPv6; `:9090` for every interface). */
export function parseListenAddress(text: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  const host = match[1] ?? match[2] ?? "";
  return { host: host === "" ? "0.0.0.0" : host, port };
}

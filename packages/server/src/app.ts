/**
 * The Hono app: everything that is not a Connect procedure path. Health probes, the public CRLs
 * of X.509 authorities (crl-routes.ts), what each authority asks relying parties to trust
 * (trust-routes.ts), and the REST
 * paths of the google.api.http annotations, transcoded by `./rest/` and run through the same edge
 * and `platform.invoke` as Connect (server streams: `platform.stream`, as NDJSON).
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { DescMethod, DescMethodServerStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import type { Http2Bindings, HttpBindings } from "@hono/node-server";
import { platformServices } from "@wap/api";
import {
  DeadlineExceededError,
  NotFoundError,
  PlatformError,
  UnavailableError,
  UnimplementedError,
} from "@wap/core";
import { procedureOf } from "@wap/core/internal";
import type { Storage } from "@wap/core/storage";
import { Hono } from "hono";
import { billingWebhookRoutes } from "./billing-webhook.js";
import type { ConsoleAssets } from "./console-assets.js";
import { crlRoutes } from "./crl-routes.js";
import {
  callerFor,
  callPlatform,
  type EdgeRequest,
  type EdgeSettings,
  edgeOf,
  untilClosing,
} from "./edge.js";
import { admitted } from "./endpoint-edge.js";
import { refusalResponse } from "./error-responses.js";
import type { InstallFiles } from "./install-files.js";
import { ndjsonStream } from "./ndjson-stream.js";
import { readJsonBodyText } from "./read-body.js";
import { buildRequest, createRestRoutes, type RestRoutes, writeResponse } from "./rest/index.js";
import { ssoRoutes } from "./sso-routes.js";
import { parseTimeoutMs } from "./timeout.js";
import { trustRoutes } from "./trust-routes.js";

export interface AppSettings {
  readonly edge: EdgeSettings;
  readonly storage: Pick<Storage, "ping">;
  /** Largest request body accepted, in bytes. */
  readonly bodyLimitBytes: number;
  /** Time a request body (other than a client stream's) may take to arrive; default 30 s. */
  readonly bodyTimeoutMs?: number;
  /** Aborted when the server shuts down for good: running REST calls answer `unavailable`. */
  readonly shutdownSignal: AbortSignal;
  /** The web console's files, served for every GET that is not an API path; absent: no console. */
  readonly console?: ConsoleAssets | undefined;
  /** The release's packages and the agent's install script, under /install/. */
  readonly install?: InstallFiles | undefined;
}

type Env = { Bindings: HttpBindings | Http2Bindings };

/** Paths that skip the edge: no credentials, no rate limit, no database (except /readyz's ping). */
export const probePaths: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);

const readinessTimeoutMs = 2_000;

export function createApp(
  settings: AppSettings,
  routes: RestRoutes = createRestRoutes(platformServices),
): Hono<Env> {
  const app = new Hono<Env>();

  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    try {
      await withTimeout(settings.storage.ping(), readinessTimeoutMs);
      return c.json({ status: "ready" });
    } catch (error) {
      settings.edge.logger.warn("readiness check failed", { error: String(error) });
      return c.json({ status: "unavailable" }, 503);
    }
  });

  app.get("/openapi.json", (c) => {
    // Past the edge like the API itself: counted against the rate limit, and refused over it.
    const { edge, refusal } = admitted(c);
    if (refusal) return refusalResponse(edge, refusal, settings.edge.logger);
    return c.body(openApiDocument(), 200, {
      "Content-Type": "application/json",
      "Cache-Control": "public, max-age=300",
    });
  });

  // Browser and provider endpoints that are not RPCs: SSO sign-in, the billing webhook.
  app.route("/", ssoRoutes(settings));
  app.route("/", billingWebhookRoutes(settings));
  app.route("/", crlRoutes(settings));
  app.route("/", trustRoutes(settings));

  app.all("*", async (c) => {
    const edge = edgeOf(c.env.incoming);
    if (!edge) throw new Error("request reached the REST app without passing the edge");
    const url = new URL(c.req.url);
    const fail = (error: unknown, status?: number) =>
      refusalResponse(edge, error, settings.edge.logger, status === undefined ? {} : { status });

    try {
      const match = routes.match(c.req.method, url.pathname);
      if (match === null) {
        return fail(
          new NotFoundError(`no REST route for ${c.req.method} ${url.pathname}`, { reason: "NO_ROUTE" }),
        );
      }
      if ("allowedMethods" in match) {
        const allow = match.allowedMethods.join(", ");
        const error = new UnimplementedError(
          `${c.req.method} is not allowed on ${url.pathname}; allowed: ${allow}`,
          {
            reason: "METHOD_NOT_ALLOWED",
            headers: { Allow: allow },
          },
        );
        return fail(error, 405);
      }
      const method = match.method;
      edge.rpc = procedureOf(method);
      if (method.methodKind === "server_streaming" && settings.edge.platform.streams.has(edge.rpc)) {
        callerFor(edge, settings.edge, method);
        const timeoutMs = parseTimeoutMs(c.req.header("connect-timeout-ms"));
        // A stream also ends as soon as the server starts shutting down, not after the grace period.
        const stopping = untilClosing(settings.edge, settings.shutdownSignal);
        const deadline = callSignal(c.env.outgoing, timeoutMs, stopping);
        try {
          const body = await readJsonBodyText(c.req.raw, settings.bodyLimitBytes);
          const request = buildRequest(match, { query: url.searchParams, bodyText: body });
          return await ndjsonStream({
            edge,
            settings: settings.edge,
            method: method as DescMethodServerStreaming,
            request,
            signal: deadline.signal,
            onEnd: () => deadline.dispose(),
            fail,
          });
        } catch (error) {
          deadline.dispose();
          throw error;
        }
      }
      if (method.methodKind !== "unary") return fail(refuseStream(edge, settings.edge, method));

      // Refusals (rate limit, CSRF, bad credential) come before reading a body we would not use.
      callerFor(edge, settings.edge, method);
      const timeoutMs = parseTimeoutMs(c.req.header("connect-timeout-ms"));
      // The deadline runs from here, as on the Connect paths: reading the body counts.
      const deadline = callSignal(c.env.outgoing, timeoutMs, settings.shutdownSignal);
      try {
        const body = await readJsonBodyText(c.req.raw, settings.bodyLimitBytes);
        const request = buildRequest(match, { query: url.searchParams, bodyText: body });
        // The route table only holds methods of the contract; unary was checked above.
        const unary = method as DescMethodUnary;
        const { response, setCookies } = await callPlatform(
          edge,
          settings.edge,
          unary,
          request,
          deadline.signal,
        );
        edge.code = "ok";
        const answer = new Response(writeResponse(method, response), {
          status: 200,
          headers: { "Content-Type": "application/json" },
        });
        for (const cookie of setCookies ?? []) answer.headers.append("Set-Cookie", cookie);
        return answer;
      } finally {
        deadline.dispose();
      }
    } catch (error) {
      return fail(error);
    }
  });

  return app;
}

/**
 * REST carries unary calls and server streams (as NDJSON); an RPC streaming both ways is called
 * over Connect, gRPC or gRPC-Web only.
 */
function refuseStream(edge: EdgeRequest, settings: EdgeSettings, method: DescMethod): unknown {
  try {
    callerFor(edge, settings, method);
  } catch (error) {
    return error;
  }
  return new UnimplementedError(
    `${method.parent.typeName}/${method.name} streams both ways: call it over Connect, gRPC or gRPC-Web (REST carries unary calls and server streams only)`,
  );
}

/**
 * The signal a REST call runs under: the client's deadline, the client going away, or the
 * server shutting down, whichever comes first.
 */
function callSignal(
  outgoing: { once(event: "close", listener: () => void): unknown; writableFinished: boolean },
  timeoutMs: number | undefined,
  shutdownSignal: AbortSignal,
) {
  const controller = new AbortController();
  const abort = (reason: PlatformError) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(
          () => abort(new DeadlineExceededError(`the deadline of ${timeoutMs} ms passed`)),
          timeoutMs,
        );
  const onShutdown = () => abort(new UnavailableError("the server is shutting down; retry"));
  if (shutdownSignal.aborted) onShutdown();
  else shutdownSignal.addEventListener("abort", onShutdown, { once: true });
  outgoing.once("close", () => {
    if (!outgoing.writableFinished) {
      abort(new PlatformError("canceled", "the client closed the request", { reason: "CANCELED" }));
    }
  });
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      shutdownSignal.removeEventListener("abort", onShutdown);
    },
  };
}

let openApiText: string | undefined;

/**
 * The OpenAPI document generated from the protos (`pnpm generate`), shipped beside `src/` and
 * `dist/` in the package; read once.
 */
function openApiDocument(): string {
  openApiText ??= readFileSync(join(import.meta.dirname, "..", "openapi.json"), "utf8");
  return openApiText;
}

export async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The request edge, shared by Connect and REST: everything decided about a request before an
 * operation runs. It reads the request id, client address and credentials, authenticates, counts
 * the request against the rate limit, checks CSRF and the Connect protocol version, and sets the
 * response headers every answer carries. Refusals are kept, not answered here, so that each
 * protocol answers them in its own wire format when the handler runs ({@link callPlatform}).
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { DescMessage, DescMethod, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  anonymous,
  type CallContext,
  type Caller,
  createCallContext,
  DeadlineExceededError,
  type ErrorCode,
  type ErrorReason,
  InvalidArgumentError,
  type Platform,
  PlatformError,
  ResourceExhaustedError,
  UnavailableError,
} from "@wap/core";
import { type Access, type CredentialSource, procedureOf } from "@wap/core/internal";
import { clientAddress } from "./client-address.js";
import { checkCsrf, crossSiteRefusal } from "./csrf.js";
import type { Logger } from "./logger.js";
import type { ServerMetrics } from "./metrics.js";
import { isProcedurePath } from "./procedure-path.js";
import {
  type RateLimiter,
  type RateLimiters,
  rateLimitHeaders,
  rateLimitKey,
  unlimited,
} from "./rate-limit.js";
import {
  type CookieSettings,
  clearedSessionCookie,
  readCookie,
  readSessionCookie,
  refreshCookieName,
  sessionCookieAfter,
  touchesSessionCookie,
} from "./session-cookie.js";
import type { StreamSpan, Tracing } from "./tracing.js";

export interface EdgeSettings {
  readonly platform: Platform;
  readonly rateLimiters: RateLimiters;
  /** Proxies trusted to append to `X-Forwarded-For` (0: trust none). */
  readonly trustedProxyHops: number;
  /** Origins other than our own that may use the session cookie (lower case, no trailing slash). */
  readonly allowedOrigins: ReadonlySet<string>;
  /** The server speaks TLS: cookies get `Secure`, our origin is https. */
  readonly secure: boolean;
  /**
   * Browsers reach the server by https (its public URL is https, a TLS proxy in front): cookies
   * get `Secure` even though the server itself speaks cleartext.
   */
  readonly publicHttps?: boolean;
  readonly logger: Logger;
  /** Aborted when the server starts shutting down: open event streams end at once. */
  readonly closing?: AbortSignal;
  /** Request, rate-limit and issuance metrics, when the diagnostics listener is on. */
  readonly metrics?: ServerMetrics;
  /** A span per RPC, when OTLP export is configured. */
  readonly tracing?: Tracing;
}

/** What the edge established about one request. */
export interface EdgeRequest {
  readonly requestId: string;
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly caller: Caller;
  readonly source: CredentialSource;
  /** Set when the request must be refused whatever it calls (rate limit, CSRF, protocol version). */
  readonly refusal: PlatformError | undefined;
  /** Set when a credential was sent but did not authenticate. */
  readonly authFailure: unknown;
  /** Only the session cookie was refused: public operations (Login...) still run, as anonymous. */
  readonly onlyCookieFailed: boolean;
  /** A `Platform` challenge was refused: operations where it is optional still run, as anonymous. */
  readonly challengeFailed: boolean;
  /** The `Platform-Daemon-*` headers (names in lower case), for operations that read them. */
  readonly daemonHeaders: Readonly<Record<string, string>> | undefined;
  /** The browser reached us by https (TLS here, an https public URL, or a trusted proxy says so). */
  readonly https: boolean;
  /**
   * The `refresh` cookie, read only on the Connect path of an operation that declares it takes
   * it (RefreshToken: the cookie is sent there only).
   */
  readonly refreshCookie?: string | undefined;
  /** For the request log: the RPC served and the code answered. */
  rpc?: string;
  code?: ErrorCode | "ok";
  /** For the request log: the error's stable reason, and the workspace the request names. */
  reason?: ErrorReason;
  workspaceId?: string;
  /** The span of a stream, when traces are exported: its handler records what happens on it. */
  streamSpan?: StreamSpan;
}

/** Minimal view of a Node request (HTTP/1.1 or HTTP/2 compatibility API). */
export interface NodeRequestLike {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly socket: { readonly remoteAddress?: string | undefined };
}

/** Minimal view of a Node response. */
export interface NodeResponseLike {
  setHeader(name: string, value: string | readonly string[]): unknown;
}

// Kept on the request object itself: a WeakMap entry per request costs the GC more.
const edgeSlot = Symbol("wap.edge");

/** The edge state of a request that went through {@link admitRequest}. */
export function edgeOf(req: object): EdgeRequest | undefined {
  return (req as { [edgeSlot]?: EdgeRequest })[edgeSlot];
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The Connect procedure path a request calls, for a REST path its RPC's; undefined when no route
 * matches. `Platform` challenges sign this path, whichever way the request came.
 */
export type ProcedureResolver = (httpMethod: string, path: string) => string | undefined;

const daemonHeaderPrefix = "platform-daemon-";

/**
 * Runs the edge for one request and sets the headers every answer carries (`X-Request-Id`,
 * `X-RateLimit-*`). Never throws: whatever goes wrong becomes a refusal.
 */
export async function admitRequest(
  req: NodeRequestLike,
  res: NodeResponseLike,
  settings: EdgeSettings,
  resolveProcedure?: ProcedureResolver,
): Promise<EdgeRequest> {
  const headers = req.headers;
  const incomingId = first(headers["x-request-id"]);
  const requestId = incomingId !== undefined && requestIdPattern.test(incomingId) ? incomingId : randomUUID();
  res.setHeader("X-Request-Id", requestId);
  const ipAddress = clientAddress(
    req.socket.remoteAddress,
    headers["x-forwarded-for"],
    settings.trustedProxyHops,
  );
  const userAgent = (first(headers["user-agent"]) ?? "").slice(0, 512);
  const https = reachedByHttps(headers, settings);

  const authorization = first(headers.authorization);
  const bearer = bearerOf(authorization);
  const daemonHeaders = daemonHeadersOf(headers);
  const platformChallenge =
    bearer === undefined
      ? challengeOf(req, authorization, settings.platform, resolveProcedure, familyOf(headers, daemonHeaders))
      : undefined;
  const sessionCookie = readSessionCookie(headers.cookie);
  let caller: Caller = anonymous;
  let source: CredentialSource = "none";
  let authFailure: unknown;
  // Nothing to check: no round trip through the platform.
  if (bearer !== undefined || platformChallenge !== undefined || sessionCookie !== undefined) {
    try {
      ({ caller, source } = await settings.platform.authenticate({
        bearer,
        platformChallenge,
        sessionCookie,
      }));
    } catch (error) {
      authFailure = error;
    }
  }
  // Only a cookie that was judged invalid: not one we could not check (database down).
  const staleCookie =
    bearer === undefined &&
    platformChallenge === undefined &&
    authFailure instanceof PlatformError &&
    authFailure.code === "unauthenticated";
  // A stale cookie would otherwise be sent again and again; tell the browser to drop it.
  if (staleCookie) res.setHeader("Set-Cookie", clearedSessionCookie({ secure: https }));
  const challengeFailed =
    platformChallenge !== undefined &&
    authFailure instanceof PlatformError &&
    authFailure.code === "unauthenticated";

  // The first refusal found is the one answered.
  let refusal: PlatformError | undefined;
  const limiter =
    caller.kind === "anonymous" ? settings.rateLimiters.anonymous : settings.rateLimiters.authenticated;
  // A disabled limit (0) counts nothing and sets no header: skip the call.
  if (limiter !== unlimited)
    refusal = await countRequest(limiter, caller, ipAddress, res, settings, requestId);

  const version = first(headers["connect-protocol-version"]);
  if (version !== undefined && version !== "1") {
    refusal ??= new InvalidArgumentError(`Connect-Protocol-Version must be "1": got "${version}"`, {
      reason: "UNSUPPORTED_PROTOCOL_VERSION",
    });
  }
  // Connect GET carries the version as a query parameter instead.
  const versionParam =
    req.method === "GET" && isProcedurePath(pathOf(req.url)) ? connectQueryVersion(req.url) : undefined;
  if (versionParam !== undefined && versionParam !== "v1") {
    refusal ??= new InvalidArgumentError(`the connect query parameter must be "v1": got "${versionParam}"`, {
      reason: "UNSUPPORTED_PROTOCOL_VERSION",
    });
  }

  // The refresh cookie acts as its user too: the same origin rules as the session cookie.
  const refreshCookie =
    headers.cookie !== undefined && readsRefreshCookie(settings.platform.accessOf(pathOf(req.url)))
      ? readCookie(headers.cookie, refreshCookieName)
      : undefined;
  if (source === "cookie" || refreshCookie !== undefined) {
    refusal ??= checkCsrf(
      {
        method: (req.method ?? "GET").toUpperCase(),
        ownOrigin: ownOrigin(headers, settings),
        origin: first(headers.origin),
        secFetchSite: first(headers["sec-fetch-site"]),
        contentType: first(headers["content-type"]),
        hasConnectProtocolVersion: version !== undefined,
      },
      settings.allowedOrigins,
    );
  }

  // Login CSRF: a foreign page must not sign the browser into another account, cookie or not.
  const origin = first(headers.origin);
  const secFetchSite = first(headers["sec-fetch-site"]);
  if (refusal === undefined && (origin !== undefined || secFetchSite !== undefined)) {
    const path = pathOf(req.url);
    const procedure = isProcedurePath(path) ? path : resolveProcedure?.(req.method ?? "GET", path);
    if (procedure !== undefined && signsIn(settings.platform.accessOf(procedure))) {
      refusal = crossSiteRefusal(
        { ownOrigin: ownOrigin(headers, settings), origin, secFetchSite },
        settings.allowedOrigins,
        "to sign in here",
      );
    }
  }

  const edge: EdgeRequest = {
    requestId,
    ipAddress,
    userAgent,
    caller,
    source,
    refusal,
    authFailure,
    onlyCookieFailed: staleCookie,
    challengeFailed,
    daemonHeaders,
    https,
    refreshCookie,
  };
  (req as { [edgeSlot]?: EdgeRequest })[edgeSlot] = edge;
  return edge;
}

/** Whether an operation's answer signs a browser in (a page of another site may not call it). */
function signsIn(access: Access | undefined): boolean {
  return access?.kind === "public" && access.signsIn === true;
}

/** Whether an operation takes its credential from the `refresh` cookie when the body has none. */
function readsRefreshCookie(access: Access | undefined): boolean {
  return access?.kind === "public" && access.refreshCookie === true;
}

/** Counts the request against the caller's limit and sets the `X-RateLimit-*` headers. */
async function countRequest(
  limiter: RateLimiter,
  caller: Caller,
  ipAddress: string,
  res: NodeResponseLike,
  settings: EdgeSettings,
  requestId: string,
): Promise<PlatformError | undefined> {
  try {
    const decision = await limiter.consume(rateLimitKey(caller, ipAddress));
    const limitHeaders = rateLimitHeaders(decision);
    for (const name in limitHeaders) res.setHeader(name, limitHeaders[name]!);
    if (decision.allowed) return undefined;
    settings.metrics?.rateLimited(caller.kind === "anonymous" ? "anonymous" : "authenticated");
    return new ResourceExhaustedError(
      `rate limit exceeded: ${decision.limit} requests per window; retry after ${limitHeaders["Retry-After"]} s`,
      { reason: "RATE_LIMITED", headers: { "Retry-After": limitHeaders["Retry-After"] ?? "1" } },
    );
  } catch (error) {
    // Fail closed: a request we cannot count is refused as `unavailable` (retry later), never let
    // through unlimited. The store is the database the request would need anyway.
    settings.logger.warn("rate limiter store failed; request refused", { requestId, error: String(error) });
    settings.metrics?.rateLimiterFailed();
    return new UnavailableError("the rate limiter cannot count this request right now; retry shortly", {
      reason: "RATE_LIMITER_UNAVAILABLE",
      headers: { "Retry-After": "1" },
    });
  }
}

/**
 * The caller a call of `method` runs as, or the refusal to answer with. A failed session cookie
 * does not block public operations: a browser holding a stale cookie must still be able to sign in.
 */
export function callerFor(edge: EdgeRequest, settings: EdgeSettings, method: DescMethod): Caller {
  if (edge.refusal) throw edge.refusal;
  if (edge.authFailure !== undefined) {
    const access = settings.platform.accessOf(procedureOf(method));
    if (access?.kind !== "public") throw edge.authFailure;
    if (edge.challengeFailed && access.signature === "optional") return anonymous;
    if (!edge.onlyCookieFailed) throw edge.authFailure;
  }
  return edge.caller;
}

/**
 * The context a call of `method` runs in: its caller ({@link callerFor}: refused here when the
 * edge refused the request), the request's id, address and user agent, and `signal`. Every entry
 * (Connect, the lean paths, REST, NDJSON, the daemon streams) builds its calls' context here.
 */
export function callContextOf(
  edge: EdgeRequest,
  settings: EdgeSettings,
  method: DescMethod,
  signal: AbortSignal,
  headers?: Readonly<Record<string, string>>,
): CallContext {
  return createCallContext(callerFor(edge, settings, method), {
    requestId: edge.requestId,
    signal,
    ipAddress: edge.ipAddress,
    userAgent: edge.userAgent,
    ...(headers && { headers }),
  });
}

/** `signal`, or the server starting to shut down, whichever fires first: what a stream runs until. */
export function untilClosing(settings: Pick<EdgeSettings, "closing">, signal: AbortSignal): AbortSignal {
  return settings.closing ? AbortSignal.any([signal, settings.closing]) : signal;
}

/** The error {@link callerFor} would throw for a call of `method`, if any. */
export function refusalOf(edge: EdgeRequest, settings: EdgeSettings, method: DescMethod): unknown {
  if (edge.refusal === undefined && edge.authFailure === undefined) return undefined;
  try {
    callerFor(edge, settings, method);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** The outcome of one platform call through the edge. */
export interface EdgeCallResult<O extends DescMessage> {
  readonly response: MessageShape<O>;
  /** `Set-Cookie` headers to answer with (Login, RefreshToken, Logout). */
  readonly setCookies: readonly string[] | undefined;
}

/**
 * Runs one unary RPC for a request: refusals first, then the operation, bounded by `signal`
 * (the client's deadline, its disconnect, server shutdown). When the signal fires first, the
 * answer is `deadline_exceeded` (or `canceled`) even if the operation is still running.
 */
export async function callPlatform<I extends DescMessage, O extends DescMessage>(
  edge: EdgeRequest,
  settings: EdgeSettings,
  method: DescMethodUnary<I, O>,
  request: MessageShape<I>,
  signal: AbortSignal,
): Promise<EdgeCallResult<O>> {
  edge.rpc = procedureOf(method);
  noteWorkspace(edge, request);
  const ctx = callContextOf(edge, settings, method, signal, edge.daemonHeaders);
  const invoke = () =>
    settings.platform.invoke(method, ctx, withRefreshCookie(edge, settings, method, request));
  const work = settings.tracing
    ? settings.tracing.rpc(edge.rpc, { "wap.request_id": edge.requestId }, invoke)
    : invoke();
  const response = await untilAborted(work, signal, (late) =>
    settings.logger.error("operation failed after its request was answered", {
      requestId: edge.requestId,
      error: String(late),
    }),
  );
  return {
    response,
    setCookies: touchesSessionCookie(method)
      ? sessionCookieAfter(method, response, cookieSettings(settings, edge))
      : undefined,
  };
}

/** The id of whoever calls: the user, service account or daemon (none when anonymous). */
export function subjectIdOf(caller: Caller): string | undefined {
  switch (caller.kind) {
    case "user":
      return caller.userId;
    case "service_account":
      return caller.serviceAccountId;
    case "daemon":
      return caller.daemonId;
    default:
      return undefined;
  }
}

/** The workspace a request message names, for the request log and the stream's span. */
export function noteWorkspace(edge: EdgeRequest, request: object): void {
  const named = (request as { workspaceId?: unknown }).workspaceId;
  if (typeof named !== "string" || named === "") return;
  edge.workspaceId = named.slice(0, 128);
  edge.streamSpan?.annotate({ "wap.workspace_id": edge.workspaceId });
}

/** Cookie attributes for an answer to `edge`: `Secure` whenever the browser came by https. */
export function cookieSettings(settings: EdgeSettings, edge: Pick<EdgeRequest, "https">): CookieSettings {
  const config = settings.platform.services.config;
  return {
    secure: edge.https,
    maxAgeSeconds: config.accessTokenTtlSeconds,
    refreshMaxAgeSeconds: config.refreshTokenTtlSeconds,
  };
}

/**
 * True when the browser reached us by https: this server speaks TLS, its public URL is https,
 * or a trusted proxy says `X-Forwarded-Proto: https`.
 */
function reachedByHttps(headers: IncomingHttpHeaders, settings: EdgeSettings): boolean {
  if (settings.secure || settings.publicHttps) return true;
  return (
    settings.trustedProxyHops > 0 && firstListed(headers["x-forwarded-proto"])?.toLowerCase() === "https"
  );
}

/** RefreshToken with no token in its body spends the refresh cookie's. */
function withRefreshCookie<I extends DescMessage>(
  edge: EdgeRequest,
  settings: EdgeSettings,
  method: DescMethod,
  request: MessageShape<I>,
): MessageShape<I> {
  if (edge.refreshCookie === undefined || edge.refreshCookie === "") return request;
  const body = request as { refreshToken?: unknown };
  if (body.refreshToken !== "" || !readsRefreshCookie(settings.platform.accessOf(procedureOf(method))))
    return request;
  return { ...request, refreshToken: edge.refreshCookie };
}

/** The error a fired abort signal stands for. */
export function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  if (reason instanceof PlatformError || reason instanceof ConnectError) return reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new DeadlineExceededError("the request deadline (Connect-Timeout-Ms) passed");
  }
  return new PlatformError("canceled", "the request was cancelled", { reason: "CANCELED" });
}

function untilAborted<T>(
  work: Promise<T>,
  signal: AbortSignal,
  onLateFault: (error: unknown) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      settled = true;
      reject(abortReason(signal));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (!settled) resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        if (!settled) reject(error);
        else if (!(error instanceof PlatformError)) onLateFault(error);
      },
    );
  });
}

function pathOf(url: string | undefined): string {
  return url?.split("?", 1)[0] ?? "/";
}

function connectQueryVersion(url: string | undefined): string | undefined {
  const query = url?.split("?", 2)[1];
  return query === undefined ? undefined : (new URLSearchParams(query).get("connect") ?? undefined);
}

function bearerOf(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer(?:\s+(.*))?$/i.exec(authorization.trim());
  return match ? (match[1] ?? "").trim() : undefined;
}

/** Which kind of client signed (docs/agent-protocol.md): the daemon sends `Platform-Daemon-*`, the CLI its device id. */
type SignerFamily = "daemon" | "device";

/**
 * A `Platform` challenge (docs/agent-protocol.md) with the procedure it must be signed for, or
 * undefined when there is none or the operation called declares it unchecked (the CLI login).
 */
function challengeOf(
  req: NodeRequestLike,
  authorization: string | undefined,
  platform: Pick<Platform, "accessOf">,
  resolveProcedure: ProcedureResolver | undefined,
  family?: SignerFamily,
): { value: string; procedure: string; family?: SignerFamily } | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Platform(?:\s+(.*))?$/i.exec(authorization.trim());
  if (!match) return undefined;
  const path = pathOf(req.url);
  const procedure = isProcedurePath(path) ? path : resolveProcedure?.(req.method ?? "GET", path);
  const access = procedure === undefined ? undefined : platform.accessOf(procedure);
  if (access?.kind === "public" && access.signature === "unchecked") return undefined;
  // An unroutable path keeps its own: no procedure equals it, so the challenge fails as it should.
  return { value: (match[1] ?? "").trim(), procedure: procedure ?? path, ...(family && { family }) };
}

/** The `Platform-Daemon-*` headers of a request, or undefined when it has none. */
function daemonHeadersOf(headers: IncomingHttpHeaders): Record<string, string> | undefined {
  let found: Record<string, string> | undefined;
  for (const name in headers) {
    // Node gives header names in lower case.
    if (!name.startsWith(daemonHeaderPrefix)) continue;
    const value = first(headers[name]);
    if (value === undefined) continue;
    found ??= {};
    found[name] = value;
  }
  return found;
}

/** Which family of headers the request carries, if any. */
function familyOf(
  headers: IncomingHttpHeaders,
  daemonHeaders: Record<string, string> | undefined,
): SignerFamily | undefined {
  if (daemonHeaders !== undefined) return "daemon";
  if (headers["platform-client-device-id"] !== undefined) return "device";
  return undefined;
}

/** Our own origin as this request reached us (behind trusted proxies: as they say), e.g. `https://wap.example.com`. */
export function ownOrigin(headers: IncomingHttpHeaders, settings: EdgeSettings): string {
  const trusted = settings.trustedProxyHops > 0;
  const proto =
    (trusted ? firstListed(headers["x-forwarded-proto"]) : undefined) ?? (settings.secure ? "https" : "http");
  const host =
    (trusted ? firstListed(headers["x-forwarded-host"]) : undefined) ??
    first(headers.host) ??
    first(headers[":authority"]);
  return `${proto}://${host ?? ""}`;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function firstListed(value: string | string[] | undefined): string | undefined {
  return first(value)?.split(",")[0]?.trim() || undefined;
}

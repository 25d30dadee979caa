/**
 * The terminal WebSocket endpoints (docs/sessions.md), reached by an HTTP/1.1 upgrade on the one
 * port (cleartext or TLS):
 *
 * - `GET /v1/workspaces/{workspace_id}/sessions/{session_id}/terminal`: a browser attaches to a
 *   session it created. It offers the subprotocol `wap.terminal.v1` and proves who it is with
 *   the session cookie (then its `Origin` must be ours or an allowed one: a foreign page cannot
 *   hijack the cookie) or with a token in a second subprotocol `wap.bearer.<token>` (or an
 *   `Authorization: Bearer` header, for clients that can send one); never in the URL. Every
 *   refusal is an HTTP answer before the upgrade, with the REST error body; a session that is
 *   not the caller's, or not in that workspace, is `404` like one that does not exist.
 * - `GET /internal/session-relay/{session_id}`: another instance forwarding its browser to the
 *   session this instance relays, proving itself with a sealed token (relay-token.ts).
 *
 * After the upgrade a browser's socket waits, bounded by the `ready` timeout, until the daemon
 * claims the session, then attaches to the relay here or is forwarded to the instance relaying
 * it (relay-forward.ts). Closing it ends the session.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import {
  type Caller,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "@wap/core";
import {
  attachSession,
  endSession,
  openSshWatch,
  parseSessionEvent,
  recheckSessionAccess,
  recheckSshWatch,
  sessionRelayOf,
  sessionTopic,
  watchAccess,
} from "@wap/core/internal";
import type { DaemonSessionRecord } from "@wap/core/storage";
import { type WebSocket, WebSocketServer } from "ws";
import { admitRequest, type EdgeRequest, type EdgeSettings, ownOrigin, subjectIdOf } from "../edge.js";
import { errorStatusJson } from "../error-responses.js";
import { toPublicError } from "../errors.js";
import { streamCheckFailed } from "../logger.js";
import { httpStatusOf } from "../rest/index.js";
import { attachStreamSpan } from "../stream-spans.js";
import type { StreamSpan } from "../tracing.js";
import { forwardTerminal } from "./relay-forward.js";
import type { SessionRelayHub } from "./relay-hub.js";
import { relayTokenHeader } from "./relay-token.js";
import { endReasons } from "./session-relay.js";
import { followLogin } from "./ssh-watch-socket.js";
import {
  bearerSubprotocolPrefix,
  closeCodes,
  maxClientFrameBytes,
  terminalSubprotocol,
} from "./terminal-frames.js";
import { carryInput, closeSocket, keepAlive } from "./terminal-socket.js";

/** Receives the WebSocket upgrade requests of the listener. */
export type WebSocketUpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

const terminalPath = /^\/v1\/workspaces\/([^/]+)\/sessions\/([^/]+)\/terminal$/;
const terminalRoute = "/v1/workspaces/{workspace_id}/sessions/{session_id}/terminal";
const watchPath = /^\/v1\/workspaces\/([^/]+)\/sessions\/([^/]+)\/watch$/;
const watchRoute = "/v1/workspaces/{workspace_id}/sessions/{session_id}/watch";
const relayPath = /^\/internal\/session-relay\/([^/]+)$/;
const uuid = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** How often a waiting browser looks at the session in storage (a claim elsewhere). */
const claimPollMs = 100;
/** How long the relaying instance waits for a relay it was named for to be registered. */
const registrationWaitMs = 5_000;

/** How long a revoked session's relay has to close the browser's socket before it is closed here. */
const revokedCloseGraceMs = 5_000;

/** A refusal already decided: its status, headers and body. */
interface Refusal {
  readonly error: unknown;
  readonly headers: Record<string, string | readonly string[]>;
}

export function createTerminalEndpoint(
  settings: EdgeSettings,
  hub: SessionRelayHub,
): WebSocketUpgradeHandler {
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: maxClientFrameBytes,
    perMessageDeflate: false,
    // Only ever ours: a bearer subprotocol is never echoed back.
    handleProtocols: (offered) => (offered.has(terminalSubprotocol) ? terminalSubprotocol : false),
  });
  const extraHeaders = new WeakMap<IncomingMessage, string[]>();
  sockets.on("headers", (headers, req) => headers.push(...(extraHeaders.get(req) ?? [])));
  const { logger } = settings;

  /** Answers `refusal` on the raw socket, logs the request and ends its span. */
  function refuse(
    req: IncomingMessage,
    socket: Duplex,
    requestId: string,
    refusal: Refusal,
    started: number,
    span?: StreamSpan,
    who: { edge?: EdgeRequest; workspaceId?: string } = {},
  ) {
    const publicError = toPublicError(refusal.error, requestId, logger);
    span?.end(publicError.code);
    const status = httpStatusOf(publicError.code);
    const body = JSON.stringify(errorStatusJson(publicError));
    const lines = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`,
      "Connection: close",
      "Content-Type: application/json",
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...headerLines({ ...refusal.headers, ...publicError.headers, "X-Request-Id": requestId }),
    ];
    if (socket.writable) socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`);
    else socket.destroy();
    logRequest(req, status, publicError.code, requestId, started, who);
  }

  /**
   * The request line of a handshake: when it is refused, or, once upgraded, when the socket
   * closes (its `ms` is then the socket's whole life, and `closeCode` the WebSocket close code).
   */
  function logRequest(
    req: IncomingMessage,
    status: number,
    code: string,
    requestId: string,
    started: number,
    more: { edge?: EdgeRequest; workspaceId?: string; closeCode?: number } = {},
  ) {
    const caller = more.edge?.caller;
    logger.info("request", {
      method: req.method,
      path: (req.url ?? "/").split("?", 1)[0],
      rpc: "terminal",
      status,
      code,
      ms: Math.round((performance.now() - started) * 10) / 10,
      requestId,
      protocol: `HTTP/${req.httpVersion}`,
      client: more.edge?.ipAddress,
      userAgent: more.edge?.userAgent,
      subject: caller?.kind,
      subjectId: caller === undefined ? undefined : subjectIdOf(caller),
      workspaceId: more.workspaceId,
      closeCode: more.closeCode,
    });
  }

  /** Logs the request and ends its span when the upgraded socket closes. */
  function whenClosed(
    ws: WebSocket,
    req: IncomingMessage,
    requestId: string,
    started: number,
    span: StreamSpan | undefined,
    more: { edge?: EdgeRequest; workspaceId?: string } = {},
  ) {
    span?.event("upgraded");
    ws.once("close", (closeCode: number) => {
      const code = socketEndCode(closeCode);
      span?.annotate({ "websocket.close_code": closeCode });
      span?.end(code);
      logRequest(req, 101, code, requestId, started, { ...more, closeCode });
    });
  }

  /**
   * Completes the handshake; undefined when `ws` refused it itself (a malformed handshake gets
   * its 400 from there) and closed the connection.
   */
  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, headers: string[]) {
    extraHeaders.set(req, headers);
    return new Promise<WebSocket | undefined>((resolve) => {
      const aborted = () => resolve(undefined);
      socket.once("close", aborted);
      sockets.handleUpgrade(req, socket, head, (ws) => {
        socket.off("close", aborted);
        resolve(ws);
      });
    });
  }

  /**
   * The checks every browser handshake passes before its session is looked at: the edge
   * (credentials, rate limit), the subprotocol, the origin with the cookie, the ids in the path.
   */
  async function admitBrowser(req: IncomingMessage, match: RegExpExecArray, span: StreamSpan | undefined) {
    const collected: Record<string, string | readonly string[]> = {};
    const offered = subprotocolsOf(req);
    const bearer = offered
      .find((p) => p.startsWith(bearerSubprotocolPrefix))
      ?.slice(bearerSubprotocolPrefix.length);
    const headers = { ...req.headers };
    if (bearer !== undefined && headers.authorization === undefined)
      headers.authorization = `Bearer ${bearer}`;
    const edge = await admitRequest(
      { method: req.method, url: req.url, headers, socket: req.socket },
      {
        setHeader: (name, value) => {
          collected[name] = value;
        },
      },
      settings,
    );
    if (span) attachStreamSpan(edge, span);
    const check = () => {
      if (edge.refusal) throw edge.refusal;
      if (edge.authFailure !== undefined) throw edge.authFailure;
      if (!offered.includes(terminalSubprotocol)) {
        throw new InvalidArgumentError(`offer the WebSocket subprotocol ${terminalSubprotocol}`, {
          reason: "TERMINAL_SUBPROTOCOL_REQUIRED",
        });
      }
      if (edge.caller.kind === "anonymous") {
        throw new UnauthenticatedError(
          `attaching to a terminal needs the session cookie or a token in the subprotocol ${bearerSubprotocolPrefix}<token>`,
          { reason: "CREDENTIALS_REQUIRED" },
        );
      }
      if (edge.source === "cookie") checkOrigin(req, settings);
      const [workspaceId, sessionId] = [decode(match[1]), decode(match[2])];
      span?.annotate({ "wap.workspace_id": workspaceId, "wap.session_id": sessionId });
      if (!uuid.test(workspaceId) || !uuid.test(sessionId)) {
        throw new InvalidArgumentError("workspace_id and session_id must be UUIDs", {
          reason: "INVALID_PATH",
          violations: [
            ...(uuid.test(workspaceId) ? [] : [{ field: "workspace_id", description: "must be a UUID" }]),
            ...(uuid.test(sessionId) ? [] : [{ field: "session_id", description: "must be a UUID" }]),
          ],
        });
      }
      return {
        caller: edge.caller,
        workspaceId: workspaceId.toLowerCase(),
        sessionId: sessionId.toLowerCase(),
      };
    };
    return { edge, collected, check };
  }

  /** Refuses a handshake that failed before its upgrade, naming who asked and for which workspace. */
  function refuseBrowser(
    req: IncomingMessage,
    socket: Duplex,
    match: RegExpExecArray,
    admitted: { edge: EdgeRequest; collected: Record<string, string | readonly string[]> },
    error: unknown,
    started: number,
    span: StreamSpan | undefined,
  ) {
    const asked = decode(match[1]);
    refuse(req, socket, admitted.edge.requestId, { error, headers: admitted.collected }, started, span, {
      edge: admitted.edge,
      ...(uuid.test(asked) && { workspaceId: asked.toLowerCase() }),
    });
  }

  /** A read-only watch of a live SSH login (ssh-watch-socket.ts). */
  async function watcher(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    match: RegExpExecArray,
    span: StreamSpan | undefined,
  ) {
    const started = performance.now();
    const admitted = await admitBrowser(req, match, span);
    const { edge, collected } = admitted;
    let ws: WebSocket | undefined;
    try {
      const { caller, workspaceId, sessionId } = admitted.check();
      const login = await openSshWatch(hub.services, caller, workspaceId, sessionId, edge);
      ws = await upgrade(req, socket, head, headerLines({ ...collected, "X-Request-Id": edge.requestId }));
      if (ws === undefined) {
        span?.end("invalid_argument");
        logRequest(req, 400, "invalid_argument", edge.requestId, started, { edge, workspaceId });
        return;
      }
      edge.code = "ok";
      whenClosed(ws, req, edge.requestId, started, span, { edge, workspaceId });
      keepAlive(ws);
      const socketOf = ws;
      const stop = await watchAccess(hub.services, {
        workspaceId,
        subjectId: subjectIdOf(caller) ?? "",
        recheck: () => recheckSshWatch(hub.services, caller, workspaceId),
        onCheckFailed: (error) =>
          logger.warn(streamCheckFailed, { requestId: edge.requestId, error: String(error) }),
        onRevoked: (error) => closeSocket(socketOf, `access revoked: ${error.message}`, closeCodes.normal),
      });
      ws.once("close", stop);
      await followLogin(ws, hub.services, login);
    } catch (error) {
      if (ws === undefined) {
        refuseBrowser(req, socket, match, admitted, error, started, span);
        return;
      }
      logger.error("watch socket failed", { requestId: edge.requestId, error: String(error) });
      closeSocket(
        ws,
        `the server could not follow the login (request id ${edge.requestId}); try again`,
        closeCodes.internal,
      );
    }
  }

  async function browser(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    match: RegExpExecArray,
    span: StreamSpan | undefined,
  ) {
    const started = performance.now();
    const admitted = await admitBrowser(req, match, span);
    const { edge, collected } = admitted;
    let ws: WebSocket | undefined;
    try {
      const { workspaceId, sessionId } = admitted.check();
      const session = await attachSession(hub.services, edge.caller, workspaceId, sessionId);
      ws = await upgrade(req, socket, head, headerLines({ ...collected, "X-Request-Id": edge.requestId }));
      if (ws === undefined) {
        span?.end("invalid_argument");
        logRequest(req, 400, "invalid_argument", edge.requestId, started, { edge, workspaceId });
        return;
      }
      edge.code = "ok";
      whenClosed(ws, req, edge.requestId, started, span, { edge, workspaceId: session.workspaceId });
      keepAlive(ws);
      await endWhenAccessEnds(ws, edge.caller, session, edge.requestId);
      await connectBrowser(ws, session);
    } catch (error) {
      if (ws === undefined) {
        // Who asked, and for which workspace, as on every request line (a refusal included).
        refuseBrowser(req, socket, match, admitted, error, started, span);
        return;
      }
      // After the upgrade the socket is told in a frame; the cause stays in the log.
      logger.error("terminal socket failed", { requestId: edge.requestId, error: String(error) });
      closeSocket(
        ws,
        `the server could not reach the session (request id ${edge.requestId}); try again`,
        closeCodes.internal,
      );
    }
  }

  /**
   * Ends the session (on the daemon, the relay and every browser of it, on whichever instance)
   * when the caller's right to it goes away: signed out, removed from the workspace, the grant
   * revoked (core access-watch.ts says when to look).
   */
  async function endWhenAccessEnds(
    ws: WebSocket,
    caller: Caller,
    session: DaemonSessionRecord,
    requestId: string,
  ) {
    const { services } = hub;
    const stop = await watchAccess(services, {
      workspaceId: session.workspaceId,
      subjectId: session.userId,
      recheck: () => recheckSessionAccess(services, caller, session.workspaceId, session.id),
      onCheckFailed: (error) => logger.warn(streamCheckFailed, { requestId, error: String(error) }),
      onRevoked: (error) => {
        const reason = `access revoked: ${error.message}`;
        logger.info("terminal session ended: access revoked", { sessionId: session.id, reason });
        // The session's `close` reaches the relay wherever it runs, which tells the daemon and
        // every browser why. The socket is closed here only if that cannot happen: closing it
        // first would end the session as "closed in the browser" instead.
        const closeHere = () => {
          if (ws.readyState === ws.OPEN) closeSocket(ws, reason, closeCodes.normal);
        };
        endSession(services, session.workspaceId, session.id, reason).then(
          (ended) => {
            if (ended === null) closeHere();
            else setTimeout(closeHere, revokedCloseGraceMs).unref();
          },
          (failure: unknown) => {
            logger.warn("could not end a revoked terminal session", {
              sessionId: session.id,
              error: String(failure),
            });
            closeHere();
          },
        );
      },
    });
    ws.once("close", stop);
    if (ws.readyState !== ws.OPEN) stop();
  }

  /** Waits for the session's claim, then attaches the socket here or forwards it. */
  async function connectBrowser(ws: WebSocket, session: DaemonSessionRecord) {
    const { services } = hub;
    let closedElsewhere: string | undefined;
    let wake = () => {};
    const gone = new Promise<void>((resolve) => ws.once("close", () => resolve()));
    const carrier = carryInput(ws, () =>
      closeSocket(ws, "too much input before the session opened", closeCodes.normal),
    );
    const unsubscribe = await services.events.subscribe(sessionTopic(session.id), (payload) => {
      const event = parseSessionEvent(payload);
      if (event === null) return;
      closedElsewhere ??= event.reason;
      wake();
    });
    const stopWaiting = hub.wait(session.id, { size: carrier.size, wake: () => wake() });
    try {
      for (;;) {
        if (ws.readyState !== ws.OPEN) {
          // The browser gave up before the session opened: it ends, and the daemon's `ready` is refused.
          await endSession(services, session.workspaceId, session.id, endReasons.browserLeft);
          return;
        }
        if (closedElsewhere !== undefined) {
          closeSocket(ws, closedElsewhere, closeCodes.normal);
          return;
        }
        const status = await sessionRelayOf(services, session.workspaceId, session.id);
        if (status.kind === "closed") {
          closeSocket(ws, status.reason, closeCodes.normal);
          return;
        }
        if (status.kind === "open") {
          if (status.relay.instanceId === hub.instanceId) {
            const relay = await hub.find(session.id, registrationWaitMs);
            if (relay !== undefined) {
              relay.attach(ws, carrier.take());
              return;
            }
          } else {
            stopWaiting();
            unsubscribe();
            await forwardTerminal(ws, carrier, session, status.relay, hub);
            return;
          }
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, claimPollMs).unref();
          void gone.then(resolve);
        });
        wake = () => {};
      }
    } finally {
      stopWaiting();
      unsubscribe();
    }
  }

  async function relayPeer(req: IncomingMessage, socket: Duplex, head: Buffer, match: RegExpExecArray) {
    const started = performance.now();
    const requestId = crypto.randomUUID();
    let upgraded = false;
    try {
      const sessionId = decode(match[1]).toLowerCase();
      const token = req.headers[relayTokenHeader];
      const valid =
        typeof token === "string" &&
        uuid.test(sessionId) &&
        (await hub.tokens.verify(token, sessionId, hub.services.clock.now()));
      if (!valid) {
        throw new UnauthenticatedError("this endpoint is for the server's own instances", {
          reason: "RELAY_TOKEN_INVALID",
        });
      }
      const relay = await hub.find(sessionId, registrationWaitMs);
      if (relay === undefined || relay.ended) {
        throw new NotFoundError(`session ${sessionId} is not relayed by this instance`, {
          reason: "SESSION_NOT_RELAYED_HERE",
        });
      }
      const ws = await upgrade(req, socket, head, [`X-Request-Id: ${requestId}`]);
      upgraded = true;
      if (ws === undefined) return;
      whenClosed(ws, req, requestId, started, undefined);
      keepAlive(ws);
      relay.attach(ws, { size: undefined, input: [] });
    } catch (error) {
      if (!upgraded) refuse(req, socket, requestId, { error, headers: {} }, started);
      else logger.error("relay socket failed", { requestId, error: String(error) });
    }
  }

  return (req, socket, head) => {
    socket.on("error", () => socket.destroy());
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    const terminal = req.method === "GET" ? terminalPath.exec(path) : null;
    if (terminal) {
      const span = settings.tracing?.stream("terminal", { "http.route": terminalRoute });
      if (span) span.within(() => void browser(req, socket, head, terminal, span));
      else void browser(req, socket, head, terminal, undefined);
      return;
    }
    const watch = req.method === "GET" ? watchPath.exec(path) : null;
    if (watch) {
      const span = settings.tracing?.stream("watch", { "http.route": watchRoute });
      if (span) span.within(() => void watcher(req, socket, head, watch, span));
      else void watcher(req, socket, head, watch, undefined);
      return;
    }
    const peer = req.method === "GET" ? relayPath.exec(path) : null;
    if (peer) {
      void relayPeer(req, socket, head, peer);
      return;
    }
    refuse(
      req,
      socket,
      crypto.randomUUID(),
      {
        error: new NotFoundError(`no WebSocket endpoint at ${req.method} ${path}`, { reason: "NO_ROUTE" }),
        headers: {},
      },
      performance.now(),
    );
  };
}

/**
 * The code an upgraded socket ended with: `ok` unless the server closed it for a failure of its
 * own (`internal`) or could not reach the session's relay (`unavailable`).
 */
function socketEndCode(closeCode: number): string {
  if (closeCode === closeCodes.internal) return "internal";
  if (closeCode === closeCodes.unreachable) return "unavailable";
  return "ok";
}

/** The subprotocols a handshake offers, in order. */
function subprotocolsOf(req: IncomingMessage): string[] {
  const header = req.headers["sec-websocket-protocol"];
  if (header === undefined) return [];
  return header
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/**
 * With the session cookie, the page opening the socket must be ours or an allowed origin:
 * browsers send the cookie with a cross-site WebSocket handshake, and only `Origin` tells.
 */
function checkOrigin(req: IncomingMessage, settings: EdgeSettings): void {
  const origin = req.headers.origin;
  const allowed =
    origin !== undefined &&
    (origin.toLowerCase() === ownOrigin(req.headers, settings).toLowerCase() ||
      settings.allowedOrigins.has(origin.toLowerCase()));
  if (!allowed) {
    throw new PermissionDeniedError(
      origin === undefined
        ? "cross-site WebSocket refused: a handshake with the session cookie must carry Origin"
        : `cross-site WebSocket refused: origin ${origin} is not allowed to use the session cookie`,
      { reason: "CSRF_CHECK_FAILED" },
    );
  }
}

function decode(segment: string | undefined): string {
  try {
    return decodeURIComponent(segment ?? "");
  } catch {
    return "";
  }
}

function headerLines(headers: Record<string, string | readonly string[]>): string[] {
  const lines: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of typeof value === "string" ? [value] : value) {
      // Values come from our own edge; a line break would still split the response.
      if (!/[\r\n]/.test(one)) lines.push(`${name}: ${one}`);
    }
  }
  return lines;
}

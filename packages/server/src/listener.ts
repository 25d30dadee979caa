/**
 * One port for every protocol. Cleartext connections are sniffed: the HTTP/2 connection preface
 * goes to an h2c server (prior knowledge, as gRPC and the agent daemon use), anything else to an
 * HTTP/1.1 server (browsers, curl, gRPC-Web). With TLS, ALPN picks h2 or http/1.1.
 *
 * A client cannot hold connections by sending slowly: HTTP/1.1 headers and whole requests have
 * time limits, and one client address may hold only so many connections (`WAP_MAX_CONNECTIONS_PER_CLIENT`).
 *
 * Nothing here cuts a long stream: there is no socket idle timeout while a stream is open, and
 * idle HTTP/2 sessions get keepalive PINGs (docs/agent-protocol.md: quiet control streams, 8 h sessions).
 * A session whose peer leaves a PING unanswered for a whole keepalive interval is closed.
 *
 * @module
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import type tls from "node:tls";
import type { WebSocketUpgradeHandler } from "./daemons/terminal-endpoint.js";
import { routeUpgrades } from "./daemons/terminal-upgrade.js";

/** The request handler both servers share; it receives HTTP/1.1 and HTTP/2 requests alike. */
export type NodeHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface TlsFiles {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface ListenerOptions {
  readonly handler: NodeHandler;
  readonly host: string;
  readonly port: number;
  readonly tls?: TlsFiles | undefined;
  /** Concurrent HTTP/2 streams per connection: agents and CLIs multiplex many, so at least 100. */
  readonly maxConcurrentStreams?: number;
  /** How often an HTTP/2 session is PINGed so that proxies and NATs keep it open. */
  readonly keepaliveIntervalMs?: number;
  /** An HTTP/2 session with no open stream for this long is closed (GOAWAY). */
  readonly idleSessionTimeoutMs?: number;
  /** WebSocket handshakes (HTTP/1.1 upgrades, cleartext or TLS); without it they are plain requests. */
  readonly onWebSocket?: WebSocketUpgradeHandler | undefined;
  /** An HTTP/1.1 request must have sent all its headers within this time. */
  readonly headersTimeoutMs?: number;
  /**
   * An HTTP/1.1 request must have been received whole (headers and body) within this time; the
   * request handler bounds HTTP/2 request bodies alike (request-handler.ts).
   */
  readonly requestTimeoutMs?: number;
  /** Open connections one client address may hold; more are closed at once (0: no limit). */
  readonly maxConnectionsPerClient?: number;
}

export interface Listener {
  readonly port: number;
  readonly host: string;
  /**
   * Stops accepting connections, lets open requests finish for up to `graceMs`, then destroys
   * what is left. `beforeForce` runs when the grace period ends with requests still open.
   */
  close(graceMs: number, beforeForce?: () => void): Promise<void>;
  /** Serves new TLS connections with this certificate and key; open ones keep theirs. */
  setTls(tls: TlsFiles): void;
}

/** How long connections may take to answer the calls a shutdown aborted before they are cut. */
const forceAfterAbortMs = 1_000;

const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const defaults = {
  maxConcurrentStreams: 256,
  keepaliveIntervalMs: 60_000,
  idleSessionTimeoutMs: 15 * 60_000,
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 50_000,
  maxConnectionsPerClient: 128,
};

/** Starts listening; resolves once the port is bound (port 0 picks a free one). */
export async function listen(options: ListenerOptions): Promise<Listener> {
  const settings = { ...defaults, ...stripUndefined(options) };
  const sockets = new Set<Duplex>();
  const sessions = new Set<http2.Http2Session>();
  // Requests in flight per HTTP/1.1 socket, so that closing can drop the idle ones at once.
  const busy = new WeakMap<Duplex, number>();
  // Connections that have not said a word yet (clients open spare ones): nothing to wait for.
  const silent = new Set<Duplex>();
  let closing = false;

  const onRequest: NodeHandler = (req, res) => {
    if (req.httpVersionMajor === 1) {
      const socket = req.socket;
      busy.set(socket, (busy.get(socket) ?? 0) + 1);
      res.once("close", () => {
        busy.set(socket, (busy.get(socket) ?? 1) - 1);
        if (closing && busy.get(socket) === 0) socket.end();
      });
      if (closing) res.setHeader("Connection", "close");
    }
    options.handler(req, res);
  };

  const http2Options = {
    settings: { maxConcurrentStreams: settings.maxConcurrentStreams },
    // Room for many concurrent streams with request bodies (Node's default is 10 MB per session).
    maxSessionMemory: 64,
  };
  const h2 = options.tls
    ? http2.createSecureServer({
        ...http2Options,
        cert: options.tls.cert,
        key: options.tls.key,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
        minVersion: "TLSv1.2",
      })
    : http2.createServer(http2Options);
  h2.on("request", onRequest);
  // Long streams must not be cut by a socket timeout; idle sessions are handled below instead.
  h2.setTimeout(0);
  h2.on("session", (session) => {
    sessions.add(session);
    watchSession(session, settings.keepaliveIntervalMs, settings.idleSessionTimeoutMs);
    session.once("close", () => sessions.delete(session));
    if (closing) session.close();
  });

  const h1 = http.createServer({
    // A client that trickles its headers or body is cut, not waited for: HTTP/1.1 carries no
    // client streams here (those need HTTP/2), and a response stream is not part of this time.
    requestTimeout: settings.requestTimeoutMs,
    headersTimeout: Math.min(settings.headersTimeoutMs, settings.requestTimeoutMs),
    // How often Node looks for requests past those times (its default is every 30 s).
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, settings.headersTimeoutMs / 4)),
    keepAliveTimeout: 5_000,
  });
  h1.on("request", onRequest);
  h1.setTimeout(0);
  // Node looks for requests past their time limits from when a server listens; this one never
  // does itself (the front server hands it connections), so it is told to start looking.
  h1.emit("listening");
  if (options.onWebSocket) {
    h1.on("upgrade", routeUpgrades(h1, "connection", options.onWebSocket));
    if (options.tls) h2.on("upgrade", routeUpgrades(h2, "secureConnection", options.onWebSocket));
  }

  // With TLS the secure server also serves HTTP/1.1 (allowHTTP1); cleartext needs sniffing.
  const front = options.tls
    ? h2
    : net.createServer((socket) => {
        if (!admitConnection(socket)) return;
        track(socket);
        silent.add(socket);
        socket.once("close", () => silent.delete(socket));
        sniff(socket, settings.headersTimeoutMs, (isHttp2) => {
          silent.delete(socket);
          if (!isHttp2) busy.set(socket, 0);
          (isHttp2 ? h2 : h1).emit("connection", socket);
        });
      });
  if (options.tls) {
    h2.on("connection", (socket: net.Socket) => {
      if (admitConnection(socket)) track(socket);
    });
    h2.on("secureConnection", (socket: tls.TLSSocket) => {
      if (socket.alpnProtocol !== "h2") busy.set(socket, 0);
    });
  }

  const perClient = new Map<string, number>();
  /** Counts the socket against its address; false (and the socket closed) when over the limit. */
  function admitConnection(socket: net.Socket): boolean {
    const limit = settings.maxConnectionsPerClient;
    const address = socket.remoteAddress;
    if (limit <= 0 || address === undefined) return true;
    const open = perClient.get(address) ?? 0;
    if (open >= limit) {
      socket.destroy();
      return false;
    }
    perClient.set(address, open + 1);
    socket.once("close", () => {
      const left = (perClient.get(address) ?? 1) - 1;
      if (left <= 0) perClient.delete(address);
      else perClient.set(address, left);
    });
    return true;
  }

  function track(socket: Duplex) {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  }

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(options.port, options.host, () => {
      front.off("error", reject);
      resolve();
    });
  });
  const address = front.address() as net.AddressInfo;

  return {
    port: address.port,
    host: options.host,
    setTls(next) {
      if (!options.tls) throw new Error("this listener serves no TLS");
      // Throws for a certificate and key that do not match: the old pair stays.
      (h2 as http2.Http2SecureServer).setSecureContext({ cert: next.cert, key: next.key });
    },
    async close(graceMs, beforeForce) {
      closing = true;
      const stopped = new Promise<void>((resolve) => front.close(() => resolve()));
      // Stops its time-limit checks (it never listened, so nothing else to close).
      if (front !== h1) h1.close();
      // GOAWAY lets open streams finish while refusing new ones; idle HTTP/1.1 sockets go now.
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        if (busy.get(socket) === 0 || silent.has(socket)) socket.destroy();
      }
      const drained = Promise.race([
        stopped.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs).unref()),
      ]);
      if (!(await drained)) {
        beforeForce?.();
        // Aborted handlers answer `unavailable`; their connections, already told to close, then
        // end by themselves. Wait for that (at most a second, whatever the grace period, even
        // none) before the sockets go, so no caller is cut off without its answer.
        await Promise.race([
          stopped,
          new Promise((resolve) => setTimeout(resolve, forceAfterAbortMs).unref()),
        ]);
        for (const socket of sockets) socket.destroy();
        for (const session of sessions) session.destroy();
        await stopped;
      }
    },
  };
}

/** Waits for enough bytes to tell the HTTP/2 preface from HTTP/1.1, then hands the socket over. */
function sniff(socket: net.Socket, timeoutMs: number, route: (isHttp2: boolean) => void) {
  let seen = Buffer.alloc(0);
  const onReadable = () => {
    let chunk: Buffer | null;
    // biome-ignore lint/suspicious/noAssignInExpressions: the standard stream read loop.
    while ((chunk = socket.read() as Buffer | null) !== null) seen = Buffer.concat([seen, chunk]);
    const compared = Math.min(seen.length, preface.length);
    const matches = seen.subarray(0, compared).equals(preface.subarray(0, compared));
    if (matches && seen.length < preface.length) return; // could still be either: wait for more
    socket.off("readable", onReadable);
    socket.off("end", onEnd);
    socket.setTimeout(0);
    socket.unshift(seen);
    route(matches);
  };
  const onEnd = () => socket.destroy();
  // A connection that never says anything must not be held open forever.
  socket.setTimeout(timeoutMs, () => socket.destroy());
  socket.on("readable", onReadable);
  socket.once("end", onEnd);
  socket.on("error", () => socket.destroy());
}

/** PINGs a session while it lives, and closes it after a long time without any open stream. */
function watchSession(session: http2.Http2Session, keepaliveMs: number, idleMs: number) {
  let openStreams = 0;
  let idleSince = Date.now();
  let awaitingPong = false;
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    openStreams++;
    stream.once("close", () => {
      openStreams--;
      if (openStreams === 0) idleSince = Date.now();
    });
  });
  const timer = setInterval(
    () => {
      if (session.closed || session.destroyed) return;
      if (openStreams === 0 && Date.now() - idleSince >= idleMs) {
        session.close();
        return;
      }
      // A peer that has not answered the last PING in a whole interval is gone (a machine
      // switched off, a dropped NAT mapping): its streams end now, not when TCP gives up, so a
      // daemon behind it stops counting as online.
      if (awaitingPong) {
        session.destroy();
        return;
      }
      awaitingPong = true;
      try {
        session.ping((error) => {
          if (!error) awaitingPong = false;
        });
      } catch {
        // The session is going away; its close event clears the timer.
      }
    },
    Math.min(keepaliveMs, idleMs),
  );
  timer.unref();
  session.once("close", () => clearInterval(timer));
  // A failed PING or a reset connection must not crash the process.
  session.on("error", () => {});
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

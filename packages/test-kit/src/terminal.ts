/**
 * Both ends of a web terminal as the tests drive them: the agent daemon's session stream
 * (DaemonSessionService.Session, binary Connect over its own HTTP/2 connection, signed, with the
 * agent's 8 h `Connect-Timeout-Ms`), and a browser's WebSocket (the `ws` client), plus a world
 * with an accepted, synced daemon on an open control stream and a user allowed to log in on it.
 */

import { createHash } from "node:crypto";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  CertificateKeyType,
  CertificateService,
  DaemonService,
  DaemonSessionService,
  DaemonStatus,
  PrincipalService,
  PrincipalType,
  type SessionResponse,
  UserService,
} from "@wap/api";
import WebSocket from "ws";
import { bearer, clientFor, transportFor } from "./clients.js";
import { signUpWithWorkspace } from "./http.js";
import { responseReader } from "./response-reader.js";
import { type ControlStream, SignedDaemon, signChallenge } from "./signed-daemon.js";

/** The agent's session-stream deadline (docs/agent-protocol.md). */
export const agentSessionTimeoutMs = 28_800_000;

type SessionRequestInit =
  | { msg: { case: "ready"; value: { sessionId: string; username: string; userId: string } } }
  | { msg: { case: "stdout"; value: Uint8Array } }
  | { msg: { case: "exited"; value: { exitCode?: number; errorMessage?: string } } };

/** A daemon's session stream. */
export interface SessionStream {
  ready(session: { sessionId: string; username: string; userId: string }): void;
  stdout(bytes: Uint8Array | string): void;
  exited(errorMessage?: string): void;
  /** Ends the request side (the server sees the end of the daemon's messages). */
  halfClose(): void;
  /** The next message from the server; rejects with the stream's error, or when it ended. */
  next(): Promise<SessionResponse>;
  /** The next message that is not a `resize`. */
  nextNotResize(): Promise<SessionResponse>;
  /** Resolves with how the stream ended: undefined for a clean end, else the error. */
  ended(): Promise<unknown>;
  /** Resets the stream from the daemon's side (the agent cancels its context). */
  cancel(): void;
  /** Messages sent by the daemon so far that the server has not read yet. */
  readonly unsent: number;
}

export function openSessionStream(
  daemon: Pick<SignedDaemon, "transport">,
  options: {
    timeoutMs?: number;
    /** Sends `Connect-Timeout-Ms` without the client enforcing it, so only the server does. */
    serverTimeoutMs?: number;
  } = {},
): SessionStream {
  const client: Client<typeof DaemonSessionService> = createClient(DaemonSessionService, daemon.transport);
  const abort = new AbortController();
  const outgoing: SessionRequestInit[] = [];
  let done = false;
  let wake: (() => void) | undefined;
  async function* requests() {
    for (;;) {
      const next = outgoing.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (done || abort.signal.aborted) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  }
  const deadline =
    options.serverTimeoutMs !== undefined
      ? { headers: { "connect-timeout-ms": String(options.serverTimeoutMs) } }
      : { timeoutMs: options.timeoutMs ?? agentSessionTimeoutMs };
  const responses = responseReader(
    client.session(requests(), { signal: abort.signal, ...deadline })[Symbol.asyncIterator](),
    "the session stream",
  );
  const push = (message: SessionRequestInit) => {
    outgoing.push(message);
    wake?.();
  };
  return {
    ready: (value) => push({ msg: { case: "ready", value } }),
    stdout: (bytes) =>
      push({ msg: { case: "stdout", value: typeof bytes === "string" ? Buffer.from(bytes) : bytes } }),
    exited: (errorMessage = "") => push({ msg: { case: "exited", value: { exitCode: 0, errorMessage } } }),
    halfClose() {
      done = true;
      wake?.();
    },
    next: responses.next,
    nextNotResize: () => responses.nextExcept("resize"),
    ended: responses.ended,
    cancel() {
      abort.abort();
      wake?.();
    },
    get unsent() {
      return outgoing.length;
    },
  };
}

export interface Frame {
  readonly binary: boolean;
  readonly data: Buffer;
}

/** A browser's terminal socket. */
export interface TerminalSocket {
  readonly ws: WebSocket;
  /** Terminal input. */
  send(bytes: Uint8Array | string): void;
  resize(cols: number, rows: number): void;
  nextFrame(): Promise<Frame>;
  /** The next text frame, parsed (binary frames before it are dropped). */
  nextControl(): Promise<{ type: string; [field: string]: unknown }>;
  /** Reads binary frames until `length` bytes came; returns them. */
  readBytes(length: number): Promise<Buffer>;
  /** How the socket closed, and the `closed` frame's reason if one came. */
  closed(): Promise<{ code: number; reason: string; closedFrame: string | undefined }>;
  close(): void;
}

export interface TerminalOptions {
  readonly token?: string;
  readonly cookie?: string;
  readonly origin?: string;
  /** Default: `wap.terminal.v1`, then `wap.bearer.<token>` with a token. */
  readonly protocols?: string[];
  readonly headers?: Record<string, string>;
  readonly ca?: Buffer;
}

export function terminalUrl(baseUrl: string, workspaceId: string, sessionId: string): string {
  const url = new URL(`/v1/workspaces/${workspaceId}/sessions/${sessionId}/terminal`, baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

function socketFor(url: string, options: TerminalOptions): WebSocket {
  const protocols = options.protocols ?? [
    "wap.terminal.v1",
    ...(options.token ? [`wap.bearer.${options.token}`] : []),
  ];
  const headers: Record<string, string> = { ...options.headers };
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  return new WebSocket(url, protocols, {
    headers,
    ...(options.origin !== undefined && { origin: options.origin }),
    ...(options.ca !== undefined && { ca: options.ca }),
    perMessageDeflate: false,
  });
}

/** Opens a terminal socket; rejects with the HTTP answer when the handshake is refused. */
export function openTerminal(url: string, options: TerminalOptions = {}): Promise<TerminalSocket> {
  const ws = socketFor(url, options);
  const frames: Frame[] = [];
  let wake: (() => void) | undefined;
  let lastClosedFrame: string | undefined;
  let closedWith: { code: number; reason: string } | undefined;
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    const frame = { binary: isBinary, data: Buffer.from(data) };
    if (!isBinary && JSON.parse(frame.data.toString()).type === "closed") {
      lastClosedFrame = JSON.parse(frame.data.toString()).reason;
    }
    frames.push(frame);
    wake?.();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (code, reason) => {
      closedWith = { code, reason: reason.toString() };
      resolve(closedWith);
      wake?.();
    }),
  );
  const nextFrame = async (): Promise<Frame> => {
    for (;;) {
      const frame = frames.shift();
      if (frame) return frame;
      if (closedWith) throw new Error(`the terminal socket closed (${closedWith.code} ${closedWith.reason})`);
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  };
  const socket: TerminalSocket = {
    ws,
    send: (bytes) => ws.send(typeof bytes === "string" ? Buffer.from(bytes) : bytes, { binary: true }),
    resize: (cols, rows) => ws.send(JSON.stringify({ type: "resize", cols, rows })),
    nextFrame,
    async nextControl() {
      for (;;) {
        const frame = await nextFrame();
        if (!frame.binary) return JSON.parse(frame.data.toString());
      }
    },
    async readBytes(length) {
      const parts: Buffer[] = [];
      let got = 0;
      while (got < length) {
        const frame = await nextFrame();
        if (!frame.binary) throw new Error(`expected terminal bytes, got ${frame.data.toString()}`);
        parts.push(frame.data);
        got += frame.data.length;
      }
      return Buffer.concat(parts);
    },
    async closed() {
      const how = await closed;
      return { ...how, closedFrame: lastClosedFrame };
    },
    close: () => ws.close(1000),
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(socket));
    ws.once("unexpected-response", (_request, response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () =>
        reject(Object.assign(new Error(`refused: ${response.statusCode}`), refusalOf(response, body))),
      );
    });
    ws.once("error", reject);
  });
}

function refusalOf(
  response: { statusCode?: number | undefined; headers: Record<string, unknown> },
  body: string,
) {
  let parsed: unknown = body;
  try {
    parsed = JSON.parse(body);
  } catch {
    // kept as text
  }
  return { status: response.statusCode, body: parsed, headers: response.headers };
}

/** The HTTP refusal of a handshake, or a failure if it was accepted. */
export async function refusedTerminal(
  url: string,
  options: TerminalOptions = {},
): Promise<{
  status: number;
  body: { code: number; message: string; details: unknown[] };
  headers: Record<string, unknown>;
}> {
  try {
    const socket = await openTerminal(url, options);
    socket.ws.terminate();
  } catch (error) {
    const refusal = error as { status?: number; body?: unknown; headers?: Record<string, unknown> };
    if (refusal.status !== undefined) return refusal as never;
    throw error;
  }
  throw new Error("the handshake was accepted");
}

/**
 * A workspace with an accepted daemon whose control stream is open and whose last sync lists
 * the owner under `ubuntu`: CreateSession works at once.
 */
export async function terminalWorld(baseUrl: string, name = "term") {
  const owner = await signUpWithWorkspace(baseUrl, name);
  const transport = transportFor("connect-binary-h2", baseUrl);
  const auth = bearer(owner.accessToken);
  const admin = clientFor(DaemonService, transport);
  await clientFor(CertificateService, transport).createCertificateAuthority(
    { workspaceId: owner.workspaceId, name: "ssh-hosts", keyType: CertificateKeyType.ED25519 },
    auth,
  );
  const { token } = await admin.refreshEnrollToken({ workspaceId: owner.workspaceId }, auth);
  const { user } = await clientFor(UserService, transport).whoami({}, auth);
  const principals = clientFor(PrincipalService, transport);
  const workspaceId = owner.workspaceId;
  const userId = user!.id;

  /** Enrols, accepts and syncs a daemon letting the owner log in as `ubuntu`, and opens its control stream. */
  async function daemonOnline(hostname: string, url = baseUrl) {
    const daemon = new SignedDaemon(url, hostname);
    const { targetId } = await daemon.enroll(token);
    await admin.updateDaemon({ workspaceId, id: daemon.id!, status: DaemonStatus.ACCEPTED }, auth);
    await principals.setPrincipals({ workspaceId, targetId, usernames: ["ubuntu"] }, auth);
    const listed = await principals.listPrincipals({ workspaceId, targetId, limit: 10 }, auth);
    await principals.addSubjectsToPrincipal(
      { workspaceId, id: listed.principals[0]!.id, subjectIds: [userId], type: PrincipalType.USER },
      auth,
    );
    await daemon.sync(["ubuntu"]);
    const control = daemon.connect();
    await control.next();
    // Online once the stream is recorded as open (just after its first HeartbeatAck).
    while (!(await admin.getDaemon({ workspaceId, id: daemon.id! }, auth)).daemon?.online) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { daemon, control, id: daemon.id!, targetId };
  }

  /** Lets `subjectId` log in as `ubuntu` on the target too, and syncs the daemon so it knows. */
  async function grantLogin(
    target: { daemon: SignedDaemon; targetId: string },
    subjectId: string,
    type: PrincipalType,
  ) {
    const listed = await principals.listPrincipals(
      { workspaceId, targetId: target.targetId, limit: 10 },
      auth,
    );
    await principals.addSubjectsToPrincipal(
      { workspaceId, id: listed.principals[0]!.id, subjectIds: [subjectId], type },
      auth,
    );
    await target.daemon.sync(["ubuntu"]);
  }

  /** CreateSession as the owner; resolves once the daemon's control stream got the push. */
  async function createSession(target: { id: string; control: ControlStream }) {
    const { session } = await admin.createSession(
      { workspaceId, daemonId: target.id, username: "ubuntu" },
      auth,
    );
    await sessionPushed(target.control, session!.sessionId);
    return { sessionId: session!.sessionId, username: "ubuntu", userId };
  }

  /** A daemon online, a session pushed, its stream claimed, and a browser attached by token. */
  async function openedSession(hostname: string) {
    const daemon = await daemonOnline(hostname);
    const session = await createSession(daemon);
    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    // The first resize (80×24, or the browser's size) sends the stream's headers.
    const first = await stream.next();
    if (first.msg.case !== "resize") throw new Error(`the session stream began with ${first.msg.case}`);
    const browser = await openTerminal(terminalUrl(baseUrl, workspaceId, session.sessionId), {
      token: owner.accessToken,
    });
    return { daemon, session, stream, browser };
  }

  return {
    ...owner,
    workspaceId,
    userId,
    auth,
    admin,
    daemonOnline,
    grantLogin,
    createSession,
    openedSession,
  };
}
export type TerminalWorld = Awaited<ReturnType<typeof terminalWorld>>;

/** Waits for the push of `sessionId` on a control stream (notifications may come before it). */
export async function sessionPushed(control: ControlStream, sessionId: string): Promise<void> {
  for (;;) {
    const pushed = await control.nextNotAck();
    if (pushed.msg.case === "session" && pushed.msg.value.sessionId === sessionId) return;
    if (pushed.msg.case !== "notification") {
      throw new Error(`expected the session push, got ${JSON.stringify(pushed.msg)}`);
    }
  }
}

/** The daemon's own transport to another base URL (TLS with `ca`), signing every call as it does. */
export function daemonTransport(baseUrl: string, daemon: SignedDaemon, ca?: Buffer): Transport {
  return createConnectTransport({
    baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    ...(ca !== undefined && { nodeOptions: { ca } }),
    interceptors: [
      (next) => async (req) => {
        const procedure = new URL(req.url).pathname;
        req.header.set("authorization", `Platform ${signChallenge(daemon.key, daemon.id!, procedure)}`);
        return next(req);
      },
    ],
  });
}

/** The next message that is not a resize, which must be `stdin`, as text. */
export async function stdinText(stream: SessionStream): Promise<string> {
  const message = await stream.nextNotResize();
  if (message.msg.case !== "stdin") throw new Error(`expected stdin, got ${message.msg.case}`);
  return Buffer.from(message.msg.value).toString();
}

/**
 * Sends `chunks` chunks of 32 KiB from the daemon, each numbered in its first four bytes, keeping
 * a few in flight as the agent does, while the browser reads them all.
 */
export async function relayNumberedChunks(
  stream: SessionStream,
  browser: TerminalSocket,
  chunks: number,
): Promise<{ received: Buffer; chunkBytes: number; sentSha256: string; mib: number; ms: number }> {
  const chunkBytes = 32 * 1024;
  const sent = createHash("sha256");
  const started = performance.now();
  const reading = browser.readBytes(chunkBytes * chunks);
  for (let i = 0; i < chunks; i++) {
    const bytes = Buffer.alloc(chunkBytes, i % 251);
    bytes.writeUInt32BE(i, 0);
    sent.update(bytes);
    stream.stdout(bytes);
    while (stream.unsent > 4) await new Promise((resolve) => setImmediate(resolve));
  }
  const received = await reading;
  const ms = performance.now() - started;
  return { received, chunkBytes, sentSha256: sent.digest("hex"), mib: (chunkBytes * chunks) / 2 ** 20, ms };
}

/** Reads daemon messages until `stdin` bytes arrive, returning the sizes seen before them. */
export async function stdinAfterResizes(stream: SessionStream) {
  const sizes: Array<{ width: number; height: number }> = [];
  for (;;) {
    const message = await stream.next();
    if (message.msg.case === "resize")
      sizes.push({ width: message.msg.value.width, height: message.msg.value.height });
    else if (message.msg.case === "stdin") return { sizes, stdin: Buffer.from(message.msg.value).toString() };
    else throw new Error(`unexpected ${message.msg.case}`);
  }
}

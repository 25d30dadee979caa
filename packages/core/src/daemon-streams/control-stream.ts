/**
 * DaemonControlService.Connect, the daemon's control stream (docs/agent-protocol.md), run by the
 * platform once it has admitted the daemon (`Platform.bidiStream`), whatever transport carries it.
 *
 * - A HeartbeatAck goes out at once, so the response headers leave with it (proxies waiting for
 *   headers do not time out), then another every `keepaliveMs` of idleness, so no proxy sees the
 *   stream idle. The agent ignores them.
 * - The daemon's topic is subscribed to before it is marked online, so nothing published once it
 *   counts as online is missed; the greeting (STATUS REJECTED for a rejected daemon) follows,
 *   then every event of the topic as its ConnectResponse. `deleted` ends the stream
 *   (`unauthenticated`: its credentials no longer work).
 * - Each client `heartbeat` is answered with a HeartbeatAck; a message with nothing the server
 *   knows (field 2, the retired `sync`, from an old client) is ignored.
 * - While the stream is open, the daemon's live SSH logins are checked on every change of access
 *   (sessions/ssh-enforcement.ts); a login whose access is gone is ended and the daemon told
 *   `terminateSession`.
 * - However the stream ends (client gone, reset, shutdown, error), the daemon is marked offline
 *   unless a newer stream holds it.
 *
 * The stream is held by the instance serving it ({@link DaemonStreamHost}: its lease, its
 * batching online writer); a platform without one answers `unimplemented`.
 *
 * @module
 */
import type { ConnectRequest } from "@wap/api";
import type { DaemonCaller } from "../context.js";
import { admittedDaemon } from "../daemons/admitted-daemon.js";
import {
  type ConnectResponseInit,
  closeControlStream,
  heartbeatAck,
  openControlStream,
} from "../daemons/control.js";
import { daemonTopic, parseDaemonEvent, toConnectResponse } from "../daemons/events.js";
import type { DaemonStreamHost, HeldControlStream } from "../daemons/stream-hosts.js";
import {
  ResourceExhaustedError,
  shuttingDownError,
  UnauthenticatedError,
  UnimplementedError,
} from "../errors.js";
import type { BidiStreamingCall, StreamObserver } from "../events/streaming-operation.js";
import type { Services } from "../operations/services.js";
import { type SshWatch, watchSshSessions } from "../sessions/ssh-enforcement.js";

/** Messages held for a daemon that does not read them; beyond this the stream ends and it reconnects. */
export const maxQueuedControlMessages = 256;

/**
 * One control stream: yields the messages to send, in order. Returns once the client has gone
 * (`ctx.signal` fired). Otherwise throws why the stream ends: why reading the client's messages
 * failed (the transport knows whether that was the client's fault), `unauthenticated`
 * DAEMON_DELETED, `resource_exhausted` CONTROL_STREAM_BACKLOG, or `unavailable` SHUTTING_DOWN.
 */
export function runControlStream(
  call: BidiStreamingCall<ConnectRequest>,
): AsyncIterable<ConnectResponseInit> {
  const host = call.services.daemonStreams;
  if (host === undefined) throw new UnimplementedError("this server does not hold daemon control streams");
  // The stream keeps only what it uses, not the whole call: a daemon holds it for days.
  return controlStream({
    host,
    // Online writes through the instance's batching writer.
    services: host.servicesFor(call.services),
    daemon: admittedDaemon(call.ctx, "control stream"),
    clientGone: call.ctx.signal,
    requestId: call.ctx.requestId,
    requests: call.requests,
    ...(call.observer && { observer: call.observer }),
  });
}

/** What one control stream uses while it lasts. */
interface ControlStreamParts {
  readonly host: DaemonStreamHost;
  readonly services: Services;
  readonly daemon: DaemonCaller;
  readonly clientGone: AbortSignal;
  readonly requestId: string;
  readonly requests: AsyncIterable<ConnectRequest>;
  readonly observer?: StreamObserver;
}

async function* controlStream(parts: ControlStreamParts): AsyncGenerator<ConnectResponseInit> {
  const { host, services, daemon, clientGone, requests, observer } = parts;
  const box = new Outbox();
  const stream = host.track(daemon.daemonId, parts.requestId);
  let keepalive: ReturnType<typeof setInterval> | undefined;
  let unsubscribe: (() => void) | undefined;
  let logins: SshWatch | undefined;
  try {
    const end = () => box.finish();
    clientGone.addEventListener("abort", end, { once: true });
    stream.abort.signal.addEventListener("abort", end, { once: true });
    if (clientGone.aborted) end();

    // Headers and a first message at once; nothing below waits for the client.
    yield heartbeatAck;
    unsubscribe = await services.events.subscribe(daemonTopic(daemon.daemonId), (payload) => {
      const event = parseDaemonEvent(payload);
      if (event === null) return;
      if (event.kind === "deleted") {
        observer?.event?.("daemon.deleted");
        box.finish(
          new UnauthenticatedError("this daemon was deleted; enrol the machine again", {
            reason: "DAEMON_DELETED",
          }),
        );
        return;
      }
      if (event.kind === "sshBegun") {
        logins?.loginBegun();
        return;
      }
      const message = toConnectResponse(daemon.daemonId, event);
      if (message !== null) box.push(message);
    });
    const { greeting } = await stream.write(async () => {
      const result = await openControlStream(services, daemon, stream.holder);
      stream.opened = true;
      return result;
    });
    observer?.event?.("daemon.online");
    for (const message of greeting) box.push(message);
    logins = await watchSshSessions(services, {
      workspaceId: daemon.workspaceId,
      daemonId: daemon.daemonId,
    });
    keepalive = setInterval(() => {
      if (box.idle) box.push(heartbeatAck);
    }, host.keepaliveMs);
    keepalive.unref();
    void readRequests(requests, box);

    for (;;) {
      const message = await box.next();
      // Gone or going: what is still queued has nobody to read it.
      if (message === undefined || clientGone.aborted || stream.abort.signal.aborted) break;
      yield message;
    }
    // A transport may abort the call when a request message does not decode; the client may
    // still be there to hear why, which only the transport can tell.
    if (box.requestsFailed) throw box.error;
    if (clientGone.aborted) return;
    if (stream.abort.signal.aborted) throw shuttingDownError();
    throw box.error ?? shuttingDownError();
  } finally {
    clearInterval(keepalive);
    unsubscribe?.();
    logins?.stop();
    box.finish();
    host.untrack(stream);
    if (stream.opened) await markOffline(services, daemon, stream, host.offlineFailed.bind(host));
  }
}

async function markOffline(
  services: Services,
  daemon: DaemonCaller,
  stream: HeldControlStream,
  failed: (stream: HeldControlStream, error: unknown) => void,
): Promise<void> {
  await stream
    .write(() => closeControlStream(services, daemon, stream.holder))
    .catch((error: unknown) => failed(stream, error));
}

/** Answers the client's heartbeats until it stops sending; a broken request stream ends ours. */
async function readRequests(requests: AsyncIterable<ConnectRequest>, outbox: Outbox): Promise<void> {
  try {
    for await (const request of requests) {
      if (request.msg.case === "heartbeat") outbox.push(heartbeatAck);
      // Anything else (no member the server knows, such as the retired `sync`) is ignored.
    }
    // The client closed its side: the server may still push, so the stream stays.
  } catch (error) {
    outbox.finish(error, { fromRequests: true });
  }
}

/** What waits to be sent on one stream, and why it ends. */
class Outbox {
  #items: ConnectResponseInit[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #error: unknown;
  #requestsFailed = false;

  /** Why the stream ends, when it ends with an error. */
  get error(): unknown {
    return this.#error;
  }

  /** Whether the stream ended because reading the client's messages failed. */
  get requestsFailed(): boolean {
    return this.#requestsFailed;
  }

  get idle(): boolean {
    return this.#items.length === 0;
  }

  push(message: ConnectResponseInit): void {
    if (this.#ended) return;
    if (this.#items.length >= maxQueuedControlMessages) {
      this.finish(
        new ResourceExhaustedError(
          `the daemon did not read its control stream (${maxQueuedControlMessages} messages waiting); reconnect`,
          { reason: "CONTROL_STREAM_BACKLOG" },
        ),
      );
      return;
    }
    this.#items.push(message);
    this.#wakeUp();
  }

  /** Ends the stream: queued messages still go out first. The first reason given wins. */
  finish(error?: unknown, options?: { readonly fromRequests: boolean }): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#requestsFailed = options?.fromRequests === true;
    this.#wakeUp();
  }

  /** The next message, or undefined once the stream has ended and nothing is left to send. */
  async next(): Promise<ConnectResponseInit | undefined> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) return item;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  #wakeUp(): void {
    this.#wake?.();
  }
}

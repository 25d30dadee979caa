/**
 * DaemonControlService.Connect, the daemon's control stream (docs/agent-protocol.md),
 * as the agent opens it: Connect binary over HTTP/2, no first message, and
 * a first heartbeat only five minutes later.
 *
 * - Only an enrolled daemon signing the request may open it (anonymous: `unauthenticated`;
 *   users and service accounts: `permission_denied`), as its declaration in core says
 *   (`daemons/streams.ts`): the platform admits the caller before anything else happens.
 * - A HeartbeatAck goes out at once, so the response headers leave with it (proxies waiting for
 *   headers do not time out), then another every `keepaliveSeconds`, so no proxy sees the
 *   stream idle. The agent ignores them.
 * - The daemon's topic is subscribed to before it is marked online, so nothing published once it
 *   counts as online is missed; the greeting (STATUS REJECTED for a rejected daemon) follows,
 *   then every event of the topic as its ConnectResponse. `deleted` ends the stream
 *   (`unauthenticated`: its credentials no longer work).
 * - Each client `heartbeat` is answered with a HeartbeatAck; `sync` (SyncReport) is ignored.
 * - However the stream ends (client gone, reset, shutdown, error), the daemon is marked offline
 *   unless a newer stream holds it.
 *
 * {@link runControlStream} is the stream; the agent's requests reach it through the lean path of
 * lean/control-connect.ts, every other one through connect-node ({@link controlStreamHandler}).
 *
 * @module
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { type ConnectRequest, DaemonControlService } from "@wap/api";
import {
  type ConnectResponseInit,
  closeControlStream,
  type DaemonCaller,
  daemonTopic,
  heartbeatAck,
  openControlStream,
  parseDaemonEvent,
  procedureOf,
  ResourceExhaustedError,
  toConnectResponse,
  UnauthenticatedError,
  UnimplementedError,
} from "@wap/core";
import { answer, requireEdge, shuttingDown } from "../connect-context.js";
import type { EdgeRequest, EdgeSettings } from "../edge.js";
import { admitDaemon } from "./daemon-caller.js";
import type { TrackedStream } from "./instance.js";

const method = DaemonControlService.method.connect;
const procedure = procedureOf(method);
/** Messages held for a daemon that does not read them; beyond this the stream ends and it reconnects. */
const maxQueued = 256;

/**
 * The connect-node handler of DaemonControlService.Connect: gRPC, gRPC-Web, and the Connect
 * requests that lean/control-connect.ts leaves to connect-node.
 */
export function controlStreamHandler(settings: EdgeSettings) {
  return async function* (
    requests: AsyncIterable<ConnectRequest>,
    context: HandlerContext,
  ): AsyncGenerator<ConnectResponseInit> {
    const edge = requireEdge(context);
    try {
      yield* runControlStream(settings, edge, context.signal, requests);
    } catch (error) {
      // Nobody is left to answer, unless what aborted the call was the client's own bad message.
      if (context.signal.aborted && !isRequestFault(error)) {
        edge.code = "canceled";
        return;
      }
      throw answer(edge, settings, error);
    }
  };
}

/**
 * One control stream, whatever carries it: yields the messages to send, in order. Returns once
 * the client has gone (`clientGone` fired); otherwise throws why the stream ends (a
 * PlatformError or ConnectError, for the transport to answer).
 */
export async function* runControlStream(
  settings: EdgeSettings,
  edge: EdgeRequest,
  clientGone: AbortSignal,
  requests: AsyncIterable<ConnectRequest>,
): AsyncGenerator<ConnectResponseInit> {
  edge.rpc = procedure;
  const instance = settings.daemonStreams;
  // Online writes through the instance's batching writer.
  const services = instance?.servicesFor(settings.platform.services) ?? settings.platform.services;
  let caller: DaemonCaller | undefined;
  let stream: TrackedStream | undefined;
  let outbox: Outbox | undefined;
  let keepalive: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  try {
    caller = await admitDaemon(settings, edge, method, clientGone);
    if (instance === undefined) {
      throw new UnimplementedError("this server does not hold daemon control streams");
    }
    const daemon = caller;
    const box = new Outbox();
    outbox = box;
    const opened = instance.track(daemon.daemonId);
    stream = opened;
    const end = () => box.finish();
    clientGone.addEventListener("abort", end, { once: true });
    opened.abort.signal.addEventListener("abort", end, { once: true });
    if (clientGone.aborted) end();

    // Headers and a first message at once; nothing below waits for the client.
    yield heartbeatAck;
    unsubscribe = await services.events.subscribe(daemonTopic(daemon.daemonId), (payload) => {
      const event = parseDaemonEvent(payload);
      if (event === null) return;
      if (event.kind === "deleted") {
        edge.streamSpan?.event("daemon.deleted");
        box.finish(
          new UnauthenticatedError("this daemon was deleted; enrol the machine again", {
            reason: "DAEMON_DELETED",
          }),
        );
        return;
      }
      const message = toConnectResponse(daemon.daemonId, event);
      if (message !== null) box.push(message);
    });
    const { greeting } = await opened.write(async () => {
      const result = await openControlStream(services, daemon, opened.holder);
      opened.opened = true;
      return result;
    });
    edge.streamSpan?.event("daemon.online");
    for (const message of greeting) box.push(message);
    keepalive = setInterval(() => {
      if (box.idle) box.push(heartbeatAck);
    }, instance.keepaliveMs);
    keepalive.unref();
    void readRequests(requests, box);

    for (;;) {
      const message = await box.next();
      // Gone or going: what is still queued has nobody to read it.
      if (message === undefined || clientGone.aborted || opened.abort.signal.aborted) break;
      yield message;
    }
    // connect-node aborts the call when a request message does not decode; the client is still
    // there to hear why.
    if (isRequestFault(box.error)) throw box.error;
    if (clientGone.aborted) {
      edge.code = "canceled";
      return;
    }
    if (opened.abort.signal.aborted) throw shuttingDown();
    throw box.error ?? shuttingDown();
  } finally {
    clearInterval(keepalive);
    unsubscribe?.();
    outbox?.finish();
    if (stream !== undefined && instance !== undefined && caller !== undefined) {
      const ended = stream;
      const daemon = caller;
      instance.untrack(ended);
      if (ended.opened) {
        await ended
          .write(() => closeControlStream(services, daemon, ended.holder))
          .catch((error: unknown) =>
            // The instance's next reconciliation releases it.
            settings.logger.warn("could not mark a daemon offline", {
              daemonId: daemon.daemonId,
              error: String(error),
            }),
          );
      }
    }
  }
}

/** A request message the client sent that could not be read: its fault, answered as such. */
function isRequestFault(error: unknown): error is ConnectError {
  return error instanceof ConnectError && error.code === Code.InvalidArgument;
}

/** Answers the client's heartbeats until it stops sending; a broken request stream ends ours. */
async function readRequests(requests: AsyncIterable<ConnectRequest>, outbox: Outbox): Promise<void> {
  try {
    for await (const request of requests) {
      if (request.msg.case === "heartbeat") outbox.push(heartbeatAck);
      // `sync` (SyncReport) is never sent by the agent and carries nothing the server needs.
    }
    // The client closed its side: the server may still push, so the stream stays.
  } catch (error) {
    outbox.finish(error);
  }
}

/** What waits to be sent on one stream, and why it ends. */
class Outbox {
  #items: ConnectResponseInit[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #error: unknown;

  /** Why the stream ends, when it ends with an error. */
  get error(): unknown {
    return this.#error;
  }

  get idle(): boolean {
    return this.#items.length === 0;
  }

  push(message: ConnectResponseInit): void {
    if (this.#ended) return;
    if (this.#items.length >= maxQueued) {
      this.finish(
        new ResourceExhaustedError(
          `the daemon did not read its control stream (${maxQueued} messages waiting); reconnect`,
          { reason: "CONTROL_STREAM_BACKLOG" },
        ),
      );
      return;
    }
    this.#items.push(message);
    this.#wakeUp();
  }

  /** Ends the stream: queued messages still go out first. The first reason given wins. */
  finish(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
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

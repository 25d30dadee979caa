/**
 * DaemonSessionService.Session, the daemon's side of a web terminal (docs/agent-protocol.md),
 * as the agent opens it: binary Connect over HTTP/2, opened before the
 * user's shell starts, with `Connect-Timeout-Ms: 28800000` (8 h, honoured like any deadline).
 *
 * 1. Only an enrolled daemon signing the request may open it (its declaration in core,
 *    `daemons/streams.ts`, says so; the platform admits the caller).
 * 2. The stream carries no session id until its first message, which must be
 *    `ready{sessionId, username, userId}` within {@link readyTimeoutMs}; it is matched to the
 *    pending session pushed to this very daemon (`claimSession`), which records this instance as
 *    the session's relay.
 * 3. Then the relay runs (session-relay.ts): `resize` at once (the browser's size when one is
 *    already waiting, else the PTY's 80×24, which also sends the response headers), `stdout` to
 *    the browsers, their input and sizes back as `stdin` and `resize`.
 * 4. `close{reason}` ends the stream when the session is closed from anywhere (CloseSession on
 *    any instance, the browser leaving, the server stopping). A reset or cancelled stream, an
 *    `exited`, a half-close or the deadline is the normal end of a session: it is closed in
 *    storage and the browsers are told. `exited` is never needed (the agent rarely manages to
 *    send it) and `replay_buffer` is ignored (it is never filled).
 *
 * @module
 */
import type { HandlerContext } from "@connectrpc/connect";
import { DaemonSessionService, type SessionEnded, type SessionRequest } from "@wap/api";
import {
  claimSession,
  DeadlineExceededError,
  InvalidArgumentError,
  parseSessionEvent,
  procedureOf,
  sessionTopic,
  UnimplementedError,
} from "@wap/core";
import { answer, requireEdge, shuttingDown } from "../connect-context.js";
import type { EdgeSettings } from "../edge.js";
import { admitDaemon } from "./daemon-caller.js";
import { type DaemonMessage, endReasons, type SessionRelay } from "./session-relay.js";

const method = DaemonSessionService.method.session;

/** How long a session stream may stay silent before its `ready`. */
export const readyTimeoutMs = 30_000;

/** The Connect handler of DaemonSessionService.Session. */
export function sessionStreamHandler(settings: EdgeSettings) {
  return async function* (
    requests: AsyncIterable<SessionRequest>,
    context: HandlerContext,
  ): AsyncGenerator<DaemonMessage> {
    const edge = requireEdge(context);
    edge.rpc = procedureOf(method);
    const hub = settings.sessionRelay;
    const services = settings.platform.services;
    let relay: SessionRelay | undefined;
    let unsubscribe: (() => void) | undefined;
    const stopListening: Array<() => void> = [];
    try {
      const caller = await admitDaemon(settings, edge, method, context.signal);
      if (hub === undefined) throw new UnimplementedError("this server does not relay terminal sessions");
      const input = requests[Symbol.asyncIterator]();
      const ready = await firstReady(input, context.signal, settings.closing);

      // Listening before the claim: a close published right after it is not missed.
      let closedEarly: string | undefined;
      unsubscribe = await services.events.subscribe(
        sessionTopic(ready.sessionId.toLowerCase()),
        (payload) => {
          const event = parseSessionEvent(payload);
          if (event === null) return;
          if (relay) void relay.closedElsewhere(event.reason);
          else closedEarly ??= event.reason;
        },
      );
      const session = await claimSession(services, caller, ready, hub.relayRecord());
      const opened = hub.open(session);
      relay = opened;
      edge.streamSpan?.annotate({ "wap.session_id": session.id, "wap.workspace_id": session.workspaceId });
      edge.streamSpan?.event("session.claimed");
      if (closedEarly !== undefined) void opened.closedElsewhere(closedEarly);
      const onAbort = () => void opened.daemonEnded(streamEndReason(context));
      context.signal.addEventListener("abort", onAbort, { once: true });
      stopListening.push(() => context.signal.removeEventListener("abort", onAbort));
      if (context.signal.aborted) onAbort();
      if (settings.closing) {
        const onClosing = () => void opened.serverStopping();
        settings.closing.addEventListener("abort", onClosing, { once: true });
        stopListening.push(() => settings.closing?.removeEventListener("abort", onClosing));
        if (settings.closing.aborted) onClosing();
      }
      await opened.start();
      void pumpDaemonOutput(input, opened, context);

      for (;;) {
        const message = await opened.nextForDaemon();
        if (message === undefined || context.signal.aborted) break;
        yield message;
      }
      if (deadlinePassed(context)) throw deadlineError();
      edge.code = context.signal.aborted ? "canceled" : "ok";
    } catch (error) {
      if (deadlinePassed(context)) throw answer(edge, settings, deadlineError());
      // Nobody is left to answer.
      if (context.signal.aborted && relay !== undefined) {
        edge.code = "canceled";
        return;
      }
      throw answer(edge, settings, error);
    } finally {
      for (const stop of stopListening) stop();
      unsubscribe?.();
      // However the handler ends (the client gone mid-yield included), the session ends with it.
      if (relay !== undefined) {
        void relay.daemonEnded(streamEndReason(context));
        await relay.whenEnded();
      }
    }
  };
}

/**
 * Waits for the stream's first message, which must be `ready`, within {@link readyTimeoutMs},
 * unless the server starts stopping first.
 */
async function firstReady(input: AsyncIterator<SessionRequest>, signal: AbortSignal, closing?: AbortSignal) {
  let timer: NodeJS.Timeout | undefined;
  let onClosing: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    onClosing = () => reject(shuttingDown());
    closing?.addEventListener("abort", onClosing, { once: true });
    if (closing?.aborted) onClosing();
    timer = setTimeout(
      () =>
        reject(
          new DeadlineExceededError(
            `no ready within ${readyTimeoutMs / 1000} s: the first message of a session stream must be ready{sessionId, username, userId}`,
            { reason: "SESSION_READY_TIMEOUT" },
          ),
        ),
      readyTimeoutMs,
    );
  });
  try {
    const first = await Promise.race([input.next(), timedOut]);
    if (first.done) {
      throw new InvalidArgumentError("the session stream ended before its ready message", {
        reason: "SESSION_READY_MISSING",
      });
    }
    if (first.value.msg.case !== "ready") {
      throw new InvalidArgumentError(
        `the first message of a session stream must be ready{sessionId, username, userId}: got ${first.value.msg.case ?? "an empty message"}`,
        { reason: "SESSION_READY_MISSING" },
      );
    }
    return first.value.msg.value;
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    if (onClosing) closing?.removeEventListener("abort", onClosing);
  }
}

/** Reads the daemon's messages until its stream ends, feeding the relay. */
async function pumpDaemonOutput(
  input: AsyncIterator<SessionRequest>,
  relay: SessionRelay,
  context: HandlerContext,
): Promise<void> {
  try {
    for (;;) {
      const next = await input.next();
      if (next.done) {
        await relay.daemonEnded(endReasons.daemonClosed);
        return;
      }
      const msg = next.value.msg;
      if (msg.case === "stdout") await relay.output(msg.value);
      else if (msg.case === "exited") {
        await relay.daemonEnded(exitReason(msg.value));
        return;
      }
      // A second `ready` says nothing new.
    }
  } catch {
    await relay.daemonEnded(streamEndReason(context));
  }
}

function exitReason(ended: SessionEnded): string {
  if (ended.errorMessage !== "") return `the session ended on the daemon: ${ended.errorMessage}`;
  return `the session ended on the daemon (exit code ${ended.exitCode})`;
}

function deadlinePassed(context: HandlerContext): boolean {
  const left = context.timeoutMs();
  return left !== undefined && left <= 0;
}

const deadlineError = () =>
  new DeadlineExceededError("the session stream's deadline (Connect-Timeout-Ms) passed", {
    reason: "SESSION_DEADLINE",
  });

/** Why a stream that ended without a word ended: its deadline passed, or the daemon ended it. */
function streamEndReason(context: HandlerContext): string {
  return deadlinePassed(context) ? endReasons.deadline : endReasons.daemonClosed;
}

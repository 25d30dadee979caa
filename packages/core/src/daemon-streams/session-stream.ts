/**
 * DaemonSessionService.Session, the daemon's side of a web terminal (docs/agent-protocol.md), run
 * by the platform once it has admitted the daemon (`Platform.bidiStream`).
 *
 * 1. The stream carries no session id until its first message, which must be
 *    `ready{sessionId, username, userId}` within {@link readyTimeoutMs}; it is matched to the
 *    pending session pushed to this very daemon (`claimSession`), which records the instance
 *    holding the stream as the session's relay.
 * 2. Then the relay runs ({@link TerminalRelay}, kept by the instance): `resize` at once (the
 *    browser's size when one is already waiting, else the PTY's 80×24, which also sends the
 *    response headers), `stdout` to the browsers, their input and sizes back as `stdin` and
 *    `resize`.
 * 3. `close{reason}` ends the stream when the session is closed from anywhere (CloseSession on
 *    any instance, the browser leaving, the server stopping). A reset or cancelled stream, an
 *    `exited`, a half-close or the deadline is the normal end of a session: it is closed in
 *    storage and the browsers are told. `exited` is never needed (the agent rarely manages to
 *    send it) and `replay_buffer` is ignored (it is never filled).
 *
 * A platform without a {@link TerminalRelayHost} answers `unimplemented`.
 *
 * @module
 */
import type { SessionEnded, SessionRequest } from "@wap/api";
import { admittedDaemon } from "../daemons/admitted-daemon.js";
import { parseSessionEvent, sessionTopic } from "../daemons/events.js";
import type { SessionStreamMessage, TerminalRelay } from "../daemons/stream-hosts.js";
import {
  DeadlineExceededError,
  InvalidArgumentError,
  shuttingDownError,
  UnimplementedError,
} from "../errors.js";
import type { BidiStreamingCall } from "../events/streaming-operation.js";
import { claimSession, sessionReadyTimeoutSeconds } from "../sessions/lifecycle.js";

/**
 * How long a session stream may stay silent before its `ready`: as long as the session it names
 * waits for it, after which it could not be claimed anyway.
 */
const readyTimeoutMs = sessionReadyTimeoutSeconds * 1000;

/** Why a session ended on the daemon's side without a word from it. */
export const daemonSideEndReasons = {
  daemonClosed: "the daemon ended the session stream",
  deadline: "the session reached its time limit",
} as const;

/** The answer once the stream's deadline has passed. */
export const sessionDeadlineError = () =>
  new DeadlineExceededError("the session stream's deadline (Connect-Timeout-Ms) passed", {
    reason: "SESSION_DEADLINE",
  });

/**
 * One session stream: yields the messages for the daemon until the session ends. Returns when
 * it ends normally or the client has gone after the claim; otherwise throws why it ends.
 */
export async function* runSessionStream(
  call: BidiStreamingCall<SessionRequest>,
): AsyncGenerator<SessionStreamMessage> {
  const host = call.services.terminalRelays;
  const clientGone = call.ctx.signal;
  const deadlinePassed = () => {
    const left = call.timeLeftMs?.();
    return left !== undefined && left <= 0;
  };
  /** Why a stream that ended without a word ended: its deadline passed, or the daemon ended it. */
  const endReason = () =>
    deadlinePassed() ? daemonSideEndReasons.deadline : daemonSideEndReasons.daemonClosed;
  let relay: TerminalRelay | undefined;
  let unsubscribe: (() => void) | undefined;
  const stopListening: Array<() => void> = [];
  try {
    const caller = admittedDaemon(call.ctx, "session stream");
    if (host === undefined) throw new UnimplementedError("this server does not relay terminal sessions");
    const input = call.requests[Symbol.asyncIterator]();
    const ready = await firstReady(input, clientGone, host.closing);

    // Listening before the claim: a close published right after it is not missed.
    let closedEarly: string | undefined;
    unsubscribe = await call.services.events.subscribe(
      sessionTopic(ready.sessionId.toLowerCase()),
      (payload) => {
        const event = parseSessionEvent(payload);
        if (event === null) return;
        if (relay) void relay.closedElsewhere(event.reason);
        else closedEarly ??= event.reason;
      },
    );
    const session = await claimSession(call.services, caller, ready, host.relayRecord());
    const opened = host.open(session, call.ctx.requestId);
    relay = opened;
    call.observer?.annotate?.({ "wap.session_id": session.id, "wap.workspace_id": session.workspaceId });
    call.observer?.event?.("session.claimed");
    if (closedEarly !== undefined) void opened.closedElsewhere(closedEarly);
    stopListening.push(onAbort(clientGone, () => void opened.daemonEnded(endReason())));
    if (host.closing) stopListening.push(onAbort(host.closing, () => void opened.serverStopping()));
    await opened.start();
    void pumpDaemonOutput(input, opened, endReason);

    for (;;) {
      const message = await opened.nextForDaemon();
      if (message === undefined || clientGone.aborted) break;
      yield message;
    }
    if (deadlinePassed()) throw sessionDeadlineError();
  } catch (error) {
    if (deadlinePassed()) throw sessionDeadlineError();
    // Nobody is left to answer.
    if (clientGone.aborted && relay !== undefined) return;
    throw error;
  } finally {
    for (const stop of stopListening) stop();
    unsubscribe?.();
    // However the stream ends (the client gone mid-yield included), the session ends with it.
    if (relay !== undefined) {
      void relay.daemonEnded(endReason());
      await relay.whenEnded();
    }
  }
}

/** Calls `fn` once `signal` fires (at once if it has); returns the function that stops listening. */
function onAbort(signal: AbortSignal, fn: () => void): () => void {
  signal.addEventListener("abort", fn, { once: true });
  if (signal.aborted) fn();
  return () => signal.removeEventListener("abort", fn);
}

/**
 * Waits for the stream's first message, which must be `ready`, within {@link readyTimeoutMs},
 * unless the server starts stopping first.
 */
async function firstReady(input: AsyncIterator<SessionRequest>, signal: AbortSignal, closing?: AbortSignal) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onClosing: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    onClosing = () => reject(shuttingDownError());
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
  relay: TerminalRelay,
  endReason: () => string,
): Promise<void> {
  try {
    for (;;) {
      const next = await input.next();
      if (next.done) {
        await relay.daemonEnded(daemonSideEndReasons.daemonClosed);
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
    await relay.daemonEnded(endReason());
  }
}

function exitReason(ended: SessionEnded): string {
  if (ended.errorMessage !== "") return `the session ended on the daemon: ${ended.errorMessage}`;
  return `the session ended on the daemon (exit code ${ended.exitCode})`;
}

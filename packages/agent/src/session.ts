/**
 * One web-terminal session: `DaemonSessionService/Session` on the agent's side.
 *
 * The stream opens first (deadline 8 h), `ready{session_id, username, user_id}` is its first
 * message, then the shell starts in an 80x24 pty. The shell's output goes out as `stdout` chunks
 * of at most 32 KiB, at most 512 KiB/s (64 KiB burst); `stdin` and `resize` come back; `close`,
 * the end of the stream from the server, 30 minutes without input or output, or the shell's exit
 * end the session. Ending kills the shell, then cancels the stream (a reset is the normal end
 * of a session for the server).
 *
 * @module
 */
import { create } from "@bufbuild/protobuf";
import { type Session, type SessionRequest, SessionRequestSchema } from "@wap/api";
import type { DaemonClient } from "@wap/client";
import { explain } from "./errors.js";
import type { LocalAccount } from "./machine.js";
import { MessageQueue, sleep, TokenBucket } from "./message-queue.js";
import { type Shell, startShell } from "./pty-shell.js";

export const sessionLimits = {
  timeoutMs: 8 * 60 * 60 * 1000,
  idleMs: 30 * 60 * 1000,
  chunkBytes: 32 * 1024,
  bytesPerSecond: 512 * 1024,
  burstBytes: 64 * 1024,
  /** How long the last output of a shell that exited may take to go out. */
  flushMs: 2_000,
} as const;

export interface RunningSession {
  readonly ended: Promise<string>;
  end(reason: string): Promise<void>;
}

export interface SessionHooks {
  started(): void;
  resized(cols: number, rows: number): void;
  ended(reason: string): void;
}

export function runSession(
  push: Session,
  account: LocalAccount,
  client: DaemonClient,
  hooks: SessionHooks,
): RunningSession {
  const { sessionId, username, userId } = push;
  const stream = new AbortController();
  const outgoing = new MessageQueue<SessionRequest>();
  const output = new TokenBucket(sessionLimits.bytesPerSecond, sessionLimits.burstBytes);
  let shell: Shell | undefined;
  let idle: NodeJS.Timeout | undefined;
  let finished = false;
  let resolveEnded!: (reason: string) => void;
  const ended = new Promise<string>((resolve) => {
    resolveEnded = resolve;
  });

  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => void end("30 minutes without input or output"), sessionLimits.idleMs);
  };

  async function end(reason: string, options: { flush?: boolean } = {}): Promise<void> {
    if (finished) return;
    finished = true;
    clearTimeout(idle);
    await shell?.kill();
    if (options.flush) await Promise.race([outgoing.drained(), sleep(sessionLimits.flushMs, stream.signal)]);
    stream.abort();
    outgoing.end();
    hooks.ended(reason);
    resolveEnded(reason);
  }

  outgoing.push(
    create(SessionRequestSchema, { msg: { case: "ready", value: { sessionId, username, userId } } }),
  );

  async function* requests(): AsyncGenerator<SessionRequest> {
    for await (const message of outgoing) {
      if (message.msg.case === "stdout") await output.take(message.msg.value.length, stream.signal);
      if (stream.signal.aborted) return;
      yield message;
      if (outgoing.bytes < sessionLimits.chunkBytes * 4) shell?.resume();
    }
  }

  const sendOutput = (data: Uint8Array) => {
    touch();
    for (let at = 0; at < data.length; at += sessionLimits.chunkBytes) {
      const chunk = data.subarray(at, at + sessionLimits.chunkBytes);
      outgoing.push(create(SessionRequestSchema, { msg: { case: "stdout", value: chunk } }));
    }
    // Back-pressure: stop reading the pty while the server is slower than the shell.
    if (outgoing.bytes >= sessionLimits.chunkBytes * 32) shell?.pause();
  };

  void (async () => {
    try {
      const responses = client.daemonSessions.session(requests(), {
        signal: stream.signal,
        timeoutMs: sessionLimits.timeoutMs,
      });
      shell = startShell(account, { output: sendOutput, exit: (why) => void end(why, { flush: true }) });
      hooks.started();
      touch();
      for await (const message of responses) {
        switch (message.msg.case) {
          case "stdin":
            touch();
            shell.write(message.msg.value);
            break;
          case "resize": {
            const { width, height } = message.msg.value;
            if (width > 0 && height > 0 && width <= 10_000 && height <= 10_000) {
              shell.resize(width, height);
              hooks.resized(width, height);
            }
            break;
          }
          case "close":
            return await end(
              `closed by the server${message.msg.value.reason ? `: ${message.msg.value.reason}` : ""}`,
            );
        }
      }
      await end("the server ended the stream");
    } catch (error) {
      await end(finished ? "ended" : `the stream failed: ${explain(error)}`);
    }
  })();

  return { ended, end };
}

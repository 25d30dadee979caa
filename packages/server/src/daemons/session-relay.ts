/**
 * One terminal session's relay, on the instance holding its daemon's session stream: the
 * daemon's output goes to every attached terminal socket (a browser on this instance, or
 * another instance forwarding its browser), their input and size go to the daemon, and the
 * session is recorded when its daemon records sessions.
 *
 * Flow control end to end: output waits while a socket has more than {@link peerHighWaterBytes}
 * unsent (so the daemon's HTTP/2 stream stops being read and the daemon blocks), and sockets
 * stop being read while more than {@link daemonHighWaterBytes} of input waits for the daemon.
 * Output that comes before any socket attached is kept, up to {@link backlogLimitBytes}.
 *
 * The session ends, once, for whichever reason comes first: the daemon's stream ends (reset,
 * `exited`, its deadline), the last socket closes, the session is closed elsewhere (CloseSession,
 * the sweep), no socket attached in time, or the server stops. Storage is closed with the reason
 * (which tells every instance), the daemon hears `close{reason}` when its stream is still there,
 * and every socket gets `{"type":"closed","reason"}` before it is closed.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionResponseSchema } from "@wap/api";
import {
  daemonSideEndReasons,
  endSession,
  type Services,
  type SessionRecorder,
  startSessionRecording,
} from "@wap/core/internal";
import type { DaemonSessionRecord } from "@wap/core/storage";
import type { RawData, WebSocket } from "ws";
import type { Logger } from "../logger.js";
import {
  closeCodes,
  errorFrame,
  initialTerminalSize,
  parseControlMessage,
  type TerminalSize,
} from "./terminal-frames.js";
import { asBytes, closeSocket } from "./terminal-socket.js";

/** A message for the daemon's session stream. */
export type DaemonMessage = MessageInitShape<typeof SessionResponseSchema>;

/** Output kept for the first socket while none is attached; beyond it the daemon waits. */
export const backlogLimitBytes = 1024 * 1024;
/** Unsent bytes on one socket above which output waits for it. */
export const peerHighWaterBytes = 1024 * 1024;
/** Input waiting for the daemon above which sockets stop being read, and below which they resume. */
export const daemonHighWaterBytes = 1024 * 1024;
const daemonLowWaterBytes = 256 * 1024;
/** How long a claimed session waits for its first socket. */
export const defaultAttachTimeoutMs = 60_000;

export const endReasons = {
  browserLeft: "the terminal was closed in the browser",
  noBrowser: "no browser attached to the session in time",
  serverStopping: "the server is shutting down",
  ...daemonSideEndReasons,
} as const;

/** What a socket sent while it waited for the session to be claimed; handed over on attach. */
export interface CarriedInput {
  readonly size: TerminalSize | undefined;
  readonly input: readonly Uint8Array[];
}

export interface SessionRelayOptions {
  readonly services: Services;
  readonly logger: Logger;
  readonly session: DaemonSessionRecord;
  /** The size to give the PTY at once (a browser waiting on this instance said so), else 80×24. */
  readonly size?: TerminalSize | undefined;
  readonly attachTimeoutMs?: number;
  /** Called once when the relay ends, before storage is told. */
  readonly onEnded?: (relay: SessionRelay) => void;
}

interface EndPlan {
  /** Close the session in storage (it is not closed yet). */
  readonly closeInStorage: boolean;
  /** Send `close{reason}` to the daemon (its stream is still there). */
  readonly tellDaemon: boolean;
  readonly socketCode: number;
}

/** One session's relay; see the module comment. */
export class SessionRelay {
  readonly session: DaemonSessionRecord;
  readonly #options: SessionRelayOptions;
  readonly #peers = new Set<WebSocket>();
  #attachedOnce = false;
  #attachTimer: NodeJS.Timeout | undefined;
  readonly #outbox: DaemonMessage[] = [];
  #outboxBytes = 0;
  #outboxDone = false;
  #wakeOutbox: (() => void) | undefined;
  #paused = false;
  readonly #backlog: Uint8Array[] = [];
  #backlogBytes = 0;
  #wakeOutput: (() => void) | undefined;
  #size: TerminalSize;
  #sentSize: TerminalSize | undefined;
  #recorder: SessionRecorder | null = null;
  #ending: Promise<void> | undefined;
  #reason = "";

  constructor(options: SessionRelayOptions) {
    this.#options = options;
    this.session = options.session;
    this.#size = options.size ?? initialTerminalSize;
  }

  get ended(): boolean {
    return this.#ending !== undefined;
  }

  /** Why the session ended; empty while it has not. */
  get reason(): string {
    return this.#reason;
  }

  /**
   * Starts recording (when the daemon records sessions) and queues the first `resize`, which
   * also sends the stream's response headers. Ends the session when recording cannot start.
   */
  async start(): Promise<void> {
    const timeoutMs = this.#options.attachTimeoutMs ?? defaultAttachTimeoutMs;
    this.#attachTimer = setTimeout(() => {
      if (!this.#attachedOnce) void this.#end(endReasons.noBrowser, fromServer);
    }, timeoutMs);
    this.#attachTimer.unref();
    try {
      this.#recorder = await startSessionRecording(this.#options.services, this.session, this.#size, {
        onError: (error) =>
          this.#options.logger.warn("session recording stopped: a write failed", {
            sessionId: this.session.id,
            error: String(error),
          }),
      });
    } catch (error) {
      this.#options.logger.error("session recording could not start; session closed", {
        sessionId: this.session.id,
        error: String(error),
      });
      await this.#end("the session could not be recorded", fromServer);
      return;
    }
    // Ended while the recording started: nothing more to record.
    if (this.ended) await this.#closeRecorder();
    else this.#resize(this.#size);
  }

  /** The next message for the daemon, or undefined once the stream should end. */
  async nextForDaemon(): Promise<DaemonMessage | undefined> {
    for (;;) {
      const message = this.#outbox.shift();
      if (message !== undefined) {
        if (message.msg?.case === "stdin") this.#outboxBytes -= message.msg.value.length;
        if (this.#paused && this.#outboxBytes <= daemonLowWaterBytes) this.#setPaused(false);
        return message;
      }
      if (this.#outboxDone) return undefined;
      await new Promise<void>((resolve) => {
        this.#wakeOutbox = resolve;
      });
      this.#wakeOutbox = undefined;
    }
  }

  /** Output from the daemon; resolves when more may be read. */
  async output(bytes: Uint8Array): Promise<void> {
    if (this.ended) return;
    this.#recorder?.output(bytes);
    if (this.#peers.size === 0) {
      this.#backlog.push(bytes);
      this.#backlogBytes += bytes.length;
      while (this.#backlogBytes > backlogLimitBytes && this.#peers.size === 0 && !this.ended) {
        await new Promise<void>((resolve) => {
          this.#wakeOutput = resolve;
        });
      }
      return;
    }
    const saturated: Promise<void>[] = [];
    for (const peer of this.#peers) {
      const flushed = new Promise<void>((resolve) => peer.send(bytes, { binary: true }, () => resolve()));
      if (peer.bufferedAmount > peerHighWaterBytes) saturated.push(flushed);
    }
    if (saturated.length > 0) {
      const ended = new Promise<void>((resolve) => {
        this.#wakeOutput = resolve;
      });
      await Promise.race([Promise.all(saturated), ended]);
    }
  }

  /** Attaches a terminal socket; what it sent while waiting goes to the daemon first. */
  attach(socket: WebSocket, carried: CarriedInput): void {
    if (this.ended) {
      closeSocket(socket, this.#reason, closeCodes.normal);
      return;
    }
    if (socket.readyState !== socket.OPEN) {
      // Gone before it could attach: as if it had attached and left.
      if (this.#peers.size === 0) void this.#end(endReasons.browserLeft, fromServer);
      return;
    }
    this.#peers.add(socket);
    this.#attachedOnce = true;
    clearTimeout(this.#attachTimer);
    if (this.#paused) socket.pause();
    for (const bytes of this.#backlog.splice(0)) socket.send(bytes, { binary: true });
    this.#backlogBytes = 0;
    this.#wakeOutput?.();
    if (carried.size) this.#resize(carried.size);
    for (const bytes of carried.input) this.#stdin(bytes);
    socket.on("message", (data: RawData, isBinary: boolean) => {
      if (isBinary) this.#stdin(asBytes(data));
      else this.#control(socket, asBytes(data).toString());
    });
    socket.once("close", () => {
      this.#peers.delete(socket);
      if (this.#peers.size === 0) void this.#end(endReasons.browserLeft, fromServer);
    });
  }

  /** The daemon's stream ended (reset, `exited`, half-closed, deadline). */
  daemonEnded(reason: string): Promise<void> {
    return this.#end(reason, { closeInStorage: true, tellDaemon: false, socketCode: closeCodes.normal });
  }

  /** The session was closed elsewhere (CloseSession, the sweep, another instance). */
  closedElsewhere(reason: string): Promise<void> {
    return this.#end(reason, { closeInStorage: false, tellDaemon: true, socketCode: closeCodes.normal });
  }

  /** This server is stopping. */
  serverStopping(): Promise<void> {
    return this.#end(endReasons.serverStopping, {
      closeInStorage: true,
      tellDaemon: true,
      socketCode: closeCodes.goingAway,
    });
  }

  /** Resolves once the relay has ended and storage and the recording are settled. */
  whenEnded(): Promise<void> {
    return this.#ending ?? Promise.resolve();
  }

  #stdin(bytes: Uint8Array): void {
    if (this.ended || bytes.length === 0) return;
    this.#push({ msg: { case: "stdin", value: bytes } });
    this.#outboxBytes += bytes.length;
    if (!this.#paused && this.#outboxBytes > daemonHighWaterBytes) this.#setPaused(true);
  }

  #control(socket: WebSocket, text: string): void {
    const message = parseControlMessage(text);
    if (message.kind === "invalid") socket.send(errorFrame(message.message));
    else if (message.kind === "resize") this.#resize(message.size);
  }

  #resize(size: TerminalSize): void {
    this.#size = size;
    if (this.ended || sameSize(this.#sentSize, size)) return;
    this.#sentSize = size;
    this.#push({ msg: { case: "resize", value: { width: size.width, height: size.height } } });
    this.#recorder?.resize(size.width, size.height);
  }

  #push(message: DaemonMessage): void {
    if (this.#outboxDone) return;
    this.#outbox.push(message);
    this.#wakeOutbox?.();
  }

  #setPaused(paused: boolean): void {
    this.#paused = paused;
    for (const peer of this.#peers) {
      if (paused) peer.pause();
      else peer.resume();
    }
  }

  #end(reason: string, plan: EndPlan): Promise<void> {
    if (this.#ending) return this.#ending;
    this.#reason = reason;
    clearTimeout(this.#attachTimer);
    // Input still queued has nowhere to go: only the close goes out.
    this.#outbox.length = 0;
    if (plan.tellDaemon) this.#outbox.push({ msg: { case: "close", value: { reason } } });
    this.#outboxDone = true;
    this.#wakeOutbox?.();
    this.#wakeOutput?.();
    for (const peer of this.#peers) closeSocket(peer, reason, plan.socketCode);
    this.#peers.clear();
    this.#backlog.length = 0;
    this.#options.onEnded?.(this);
    this.#options.logger.info("terminal session ended", { sessionId: this.session.id, reason });
    this.#ending = (async () => {
      if (plan.closeInStorage) {
        await endSession(this.#options.services, this.session.workspaceId, this.session.id, reason).catch(
          (error: unknown) =>
            // The sweep closes it once this instance's lease lapses, or CloseSession does.
            this.#options.logger.warn("could not close a session in storage", {
              sessionId: this.session.id,
              error: String(error),
            }),
        );
      }
      await this.#closeRecorder();
    })();
    return this.#ending;
  }

  async #closeRecorder(): Promise<void> {
    const recorder = this.#recorder;
    this.#recorder = null;
    await recorder?.close().catch((error: unknown) =>
      this.#options.logger.error("session recording could not be finished", {
        sessionId: this.session.id,
        error: String(error),
      }),
    );
  }
}

const fromServer: EndPlan = { closeInStorage: true, tellDaemon: true, socketCode: closeCodes.normal };

function sameSize(a: TerminalSize | undefined, b: TerminalSize): boolean {
  return a !== undefined && a.width === b.width && a.height === b.height;
}

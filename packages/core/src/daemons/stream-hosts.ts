/**
 * What the daemon's streams need of the server instance holding them. The platform runs the
 * streams (daemons/control-stream.ts, daemons/session-stream.ts), but the things a stream lives
 * in belong to one process: the control streams it holds (their lease and holders, its batching
 * online writer, its keepalive), and the terminal relays it serves browsers from. A server gives
 * the platform its own through `PlatformOptions` or `Platform.withStreamHosts`; a platform
 * without one answers `unimplemented` to the stream that needs it.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionResponseSchema } from "@wap/api";
import type { Services } from "../operations/services.js";
import type { DaemonSessionRecord, SessionRelayRecord } from "../storage/daemon-sessions.js";

/** The instance holding daemon control streams. */
export interface DaemonStreamHost {
  /** Unsolicited HeartbeatAck interval on every control stream (keeps proxies from idling it out). */
  readonly keepaliveMs: number;
  /** `services` with the daemons' online writes going through this instance's writer. */
  servicesFor(services: Services): Services;
  /** Registers a stream of `daemonId` (opened by the request `requestId`); call {@link untrack} when it ends. */
  track(daemonId: string, requestId: string): HeldControlStream;
  untrack(stream: HeldControlStream): void;
  /** The stream's offline record could not be written; the instance is left to release it. */
  offlineFailed(stream: HeldControlStream, error: unknown): void;
}

/** One control stream held by a {@link DaemonStreamHost}. */
export interface HeldControlStream {
  readonly daemonId: string;
  /** The request that opened the stream: what its log lines are found by. */
  readonly requestId: string;
  /** `<instanceId>/<streamId>`, unique for the life of the database. */
  readonly holder: string;
  /** Fires when the instance ends the stream (it is stopping). */
  readonly abort: { readonly signal: AbortSignal };
  /** Runs `fn` after every earlier write of this stream has settled. */
  write<T>(fn: () => Promise<T>): Promise<T>;
  /** Set once the stream's online record has been written. */
  opened: boolean;
}

/** A message the server sends the daemon on its session stream. */
export type SessionStreamMessage = MessageInitShape<typeof SessionResponseSchema>;

/** The instance relaying terminal sessions between daemons and browsers. */
export interface TerminalRelayHost {
  /** What a claim on this instance records as the session's relay. */
  relayRecord(): SessionRelayRecord;
  /** Creates and keeps the relay of a session this instance just claimed. */
  open(session: DaemonSessionRecord): TerminalRelay;
  /** Fires when the server starts stopping: a stream still waiting for its `ready` ends. */
  readonly closing?: AbortSignal;
}

/** The relay of one claimed session, as its daemon's stream drives it. */
export interface TerminalRelay {
  /** Sends the first `resize` (the browser's size, or the PTY's default). */
  start(): Promise<void>;
  /** The next message for the daemon, or undefined once the session has ended. */
  nextForDaemon(): Promise<SessionStreamMessage | undefined>;
  /** Terminal output from the daemon, for the browsers. */
  output(bytes: Uint8Array): Promise<void>;
  /** The daemon's side ended, for `reason`. */
  daemonEnded(reason: string): Promise<void>;
  /** The session was closed somewhere (CloseSession, another instance). */
  closedElsewhere(reason: string): Promise<void>;
  /** The server is stopping. */
  serverStopping(): Promise<void>;
  /** Settles once the session has ended and been recorded closed. */
  whenEnded(): Promise<void>;
}

/**
 * This instance's terminal relays (docs/sessions.md, "Across instances"). The instance that
 * receives a daemon's session stream claims the session in storage with itself as the relay
 * (its id and the internal URL the other instances reach it at) and keeps the relay here;
 * browsers attaching through any instance are forwarded to it. Terminal bytes never go through
 * the database or the event bus: only the claim and `close` do.
 *
 * The hub also runs the session sweep every few seconds: pending sessions no daemon claimed in
 * time, and open sessions whose relaying instance lost its lease, are closed and both sides of
 * their relays told.
 *
 * @module
 */
import { abandonStaleSessions, type Services, type TerminalRelayHost } from "@wap/core/internal";
import type { DaemonSessionRecord, SessionRelayRecord } from "@wap/core/storage";
import { type Logger, withFields } from "../logger.js";
import { createRelayTokenVerifier, type RelayTokenVerifier } from "./relay-token.js";
import { SessionRelay } from "./session-relay.js";
import type { TerminalSize } from "./terminal-frames.js";

export interface SessionRelayHubOptions {
  readonly services: Services;
  readonly logger: Logger;
  /**
   * This instance's id: the one its lease is renewed under (`ServerInstance`), since sessions
   * relayed by an instance without a live lease are closed by the sweep.
   */
  readonly instanceId: string;
  /** The base URL other instances reach this one at; read when a session is claimed. */
  readonly internalUrl: () => string;
  /** How often the sweep runs. Default 5 s. */
  readonly sweepIntervalMs?: number;
  /** How long a claimed session waits for its first browser. Default 60 s. */
  readonly attachTimeoutMs?: number;
  /** Fires when the server starts stopping: daemon session streams still waiting for `ready` end. */
  readonly closing?: AbortSignal;
}

/** A browser on this instance waiting for its session to be claimed. */
export interface LocalWaiter {
  /** The size the browser asked for so far, if any. */
  readonly size: () => TerminalSize | undefined;
  /** Called when the session is claimed on this instance. */
  readonly wake: () => void;
}

/** The hub, as the platform's host of daemon session streams and the terminal endpoint's relay finder. */
export interface SessionRelayHub extends TerminalRelayHost {
  readonly instanceId: string;
  readonly services: Services;
  readonly logger: Logger;
  /** Checks the tokens of instances forwarding a browser here. */
  readonly tokens: RelayTokenVerifier;
  /** What a claim on this instance records. */
  relayRecord(): SessionRelayRecord;
  /** Creates and keeps the relay of a session this instance just claimed, for the stream `requestId`. */
  open(session: DaemonSessionRecord, requestId: string): SessionRelay;
  /** The relay of a session held here; waits up to `waitMs` for one being claimed right now. */
  find(sessionId: string, waitMs: number): Promise<SessionRelay | undefined>;
  /** Registers a browser waiting on this instance; returns the function that removes it. */
  wait(sessionId: string, waiter: LocalWaiter): () => void;
  /** Terminal sessions relayed here now. */
  readonly openSessions: number;
  /** Starts the sweep (an unref'd timer). */
  start(): void;
  /** Stops the sweep and ends every relay (the server is stopping). */
  close(): Promise<void>;
}

export function createSessionRelayHub(options: SessionRelayHubOptions): SessionRelayHub {
  const { services, logger, instanceId } = options;
  const relays = new Map<string, SessionRelay>();
  const waiters = new Map<string, Set<LocalWaiter>>();
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | undefined;
  let closed = false;

  const sweep = async () => {
    try {
      const closedCount = await abandonStaleSessions(services);
      if (closedCount > 0) logger.info("closed stale terminal sessions", { sessions: closedCount });
    } catch (error) {
      logger.warn("terminal session sweep failed; retrying", { error: String(error) });
    }
  };
  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      sweeping = sweep().finally(() => {
        sweeping = undefined;
        schedule();
      });
    }, options.sweepIntervalMs ?? 5_000);
    timer.unref();
  };

  return {
    get openSessions() {
      return relays.size;
    },
    instanceId,
    services,
    logger,
    tokens: createRelayTokenVerifier(services.keyStore, instanceId),
    relayRecord: () => ({ instanceId, url: options.internalUrl() }),
    ...(options.closing && { closing: options.closing }),
    open(session, requestId) {
      const waiting = [...(waiters.get(session.id) ?? [])];
      const relay = new SessionRelay({
        services,
        // What goes wrong in the relay (a recording write) is told with the daemon stream's id.
        logger: withFields(logger, { requestId }),
        session,
        size: waiting.map((w) => w.size()).find((size) => size !== undefined),
        ...(options.attachTimeoutMs !== undefined && { attachTimeoutMs: options.attachTimeoutMs }),
        onEnded: (ended) => {
          if (relays.get(ended.session.id) === ended) relays.delete(ended.session.id);
        },
      });
      relays.set(session.id, relay);
      logger.info("terminal session opened", { sessionId: session.id, daemonId: session.daemonId });
      for (const waiter of waiting) waiter.wake();
      return relay;
    },
    async find(sessionId, waitMs) {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const relay = relays.get(sessionId);
        if (relay !== undefined || Date.now() >= deadline || closed) return relay;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    wait(sessionId, waiter) {
      const set = waiters.get(sessionId) ?? new Set<LocalWaiter>();
      waiters.set(sessionId, set);
      set.add(waiter);
      return () => {
        set.delete(waiter);
        if (set.size === 0 && waiters.get(sessionId) === set) waiters.delete(sessionId);
      };
    },
    start() {
      if (timer === undefined && !closed) schedule();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await sweeping;
      await Promise.all([...relays.values()].map((relay) => relay.serverStopping()));
    },
  };
}

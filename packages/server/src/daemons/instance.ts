/**
 * This server instance as the holder of daemon control streams (docs/daemons.md, "Online").
 *
 * A daemon is online while a stream of it is open on some instance. Each stream is recorded in
 * storage as its holder, `<instanceId>/<streamId>`, and counts only while its instance's lease
 * is live. Every `leaseSeconds / 3` the instance:
 *
 * 1. renews its lease; a lease found lapsed (the process stalled, or the database was out of
 *    reach, for a whole lease) is established anew, and step 3 restates what was lost;
 * 2. releases the holders of every instance whose lease lapsed (one that crashed, or was killed
 *    without stopping), so that a daemon is reported offline at most a lease and a tick after
 *    its instance died;
 * 3. reconciles its own holders with the streams it has open: a holder without a stream (its
 *    close failed to reach the database) is released, and an open stream without its holder
 *    (released while this instance was lapsed) is restated unless the daemon has a newer stream
 *    elsewhere.
 *
 * Writes of one stream's state are serialised ({@link TrackedStream.write}), so a restatement
 * can never land after the stream's own "offline". The online writes of all streams go through
 * one writer that commits whatever is waiting in a single transaction, one at a time: a
 * reconnect storm of thousands of daemons costs a few commits (each an fsync on SQLite), not one
 * per daemon, and each stream still waits for its own write.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "@wap/core";
import type { DaemonStreamHost, HeldControlStream, Services } from "@wap/core/internal";
import type { DaemonRepository, Storage } from "@wap/core/storage";
import type { Logger } from "../logger.js";

export interface ServerInstanceOptions {
  readonly storage: Storage;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a lease lasts without renewal: the bound on how long a dead instance's daemons stay online. */
  readonly leaseSeconds: number;
  /** Unsolicited HeartbeatAck interval on every control stream (keeps proxies from idling it out). */
  readonly keepaliveSeconds: number;
  /**
   * Default: a random UUID. A fixed id must be unique among running processes (no `/`); a
   * process starting under it releases what the previous one held.
   */
  readonly id?: string;
}

/** One control stream open on this instance. */
export interface TrackedStream extends HeldControlStream {
  /** Ends the stream (lease trouble is not a reason; shutdown is). */
  readonly abort: AbortController;
  /** Set when the stream ends, before its offline record is written. */
  closed: boolean;
}

/** This instance: the platform's host of daemon control streams, and their lease. */
export interface ServerInstance extends DaemonStreamHost {
  readonly id: string;
  /** Registers a stream of `daemonId` (opened by the request `requestId`); call {@link untrack} when it ends. */
  track(daemonId: string, requestId: string): TrackedStream;
  untrack(stream: TrackedStream): void;
  /** Open streams, for tests and the log. */
  readonly openStreams: number;
  /** Establishes the lease and releases dead instances' holders. Call before serving. */
  start(): Promise<void>;
  /** Ends every open stream (their clients reconnect elsewhere). */
  endStreams(): void;
  /** Stops the lease, releases whatever this instance still holds and forgets the lease. */
  stop(): Promise<void>;
}

export function createServerInstance(options: ServerInstanceOptions): ServerInstance {
  const id = options.id ?? randomUUID();
  const prefix = `${id}/`;
  const leaseMs = options.leaseSeconds * 1000;
  const tickMs = Math.max(50, Math.floor(leaseMs / 3));
  const setOnline = createOnlineWriter(options.storage);
  const daemons = withOnlineWriter(options.storage.daemons, setOnline);
  const streams = new Map<string, TrackedStream>();
  let nextStream = 0;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let stopped = false;
  let hosted: { readonly of: Services; readonly services: Services } | undefined;

  const leaseUntil = () => {
    const now = options.clock.now();
    return { now, expiresAt: new Date(now.getTime() + leaseMs) };
  };

  async function tick(): Promise<void> {
    const { now, expiresAt } = leaseUntil();
    if (!(await daemons.renewInstanceLease(id, expiresAt, now))) {
      options.logger.warn("instance lease had lapsed; established again, restating open streams", {
        instanceId: id,
        openStreams: streams.size,
      });
    }
    const released = await daemons.releaseLapsedInstances(now);
    if (released > 0) options.logger.info("released daemons of lapsed instances", { daemons: released });
    await reconcile();
  }

  async function reconcile(): Promise<void> {
    const held = await daemons.listHolders(prefix);
    const inStorage = new Set<string>();
    for (const { daemonId, holder } of held) {
      inStorage.add(holder);
      // Holders are never reused: one without a stream here belongs to a stream that has ended.
      if (!streams.has(holder)) await daemons.setOnline(daemonId, null, options.clock.now(), holder);
    }
    for (const stream of [...streams.values()]) {
      if (!stream.opened || inStorage.has(stream.holder)) continue;
      await stream.write(async () => {
        if (!stream.closed)
          await daemons.setOnline(stream.daemonId, stream.holder, options.clock.now(), null);
      });
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      ticking = tick()
        .catch((error: unknown) =>
          options.logger.warn("instance lease tick failed; retrying", {
            instanceId: id,
            error: String(error),
          }),
        )
        .finally(() => {
          ticking = undefined;
          schedule();
        });
    }, tickMs);
    timer.unref();
  }

  return {
    id,
    keepaliveMs: options.keepaliveSeconds * 1000,
    servicesFor(services) {
      // The same for every stream of a platform: made once, not held once per connected daemon.
      if (hosted?.of !== services) {
        const storage: Storage = Object.create(services.storage, { daemons: { value: daemons } });
        hosted = { of: services, services: { ...services, storage } };
      }
      return hosted.services;
    },
    get openStreams() {
      return streams.size;
    },
    track(daemonId, requestId) {
      nextStream++;
      let chain: Promise<unknown> = Promise.resolve();
      const stream: TrackedStream = {
        daemonId,
        requestId,
        holder: `${prefix}${nextStream.toString(36)}`,
        abort: new AbortController(),
        opened: false,
        closed: false,
        write(fn) {
          const result = chain.then(fn, fn);
          chain = result.catch(() => undefined);
          return result;
        },
      };
      streams.set(stream.holder, stream);
      return stream;
    },
    untrack(stream) {
      stream.closed = true;
      streams.delete(stream.holder);
    },
    offlineFailed(stream, error) {
      // The next reconciliation releases it.
      options.logger.warn("could not mark a daemon offline", {
        requestId: stream.requestId,
        daemonId: stream.daemonId,
        error: String(error),
      });
    },
    async start() {
      const { now, expiresAt } = leaseUntil();
      // A restart under a fixed id: whatever the previous process held is over.
      await daemons.releaseHolders(prefix);
      await daemons.renewInstanceLease(id, expiresAt, now);
      const released = await daemons.releaseLapsedInstances(now);
      options.logger.info("instance registered", {
        instanceId: id,
        leaseSeconds: options.leaseSeconds,
        releasedDaemons: released,
      });
      schedule();
    },
    endStreams() {
      for (const stream of streams.values()) stream.abort.abort();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await ticking;
      try {
        await daemons.releaseHolders(prefix);
        await daemons.removeInstance(id);
      } catch (error) {
        // The lease lapses on its own; another instance then releases what is left.
        options.logger.warn(
          "could not release this instance's daemons; they go offline when its lease lapses",
          {
            instanceId: id,
            error: String(error),
          },
        );
      }
    },
  };
}

type SetOnline = DaemonRepository["setOnline"];

/** The daemons repository with `setOnline` replaced. */
function withOnlineWriter(repository: DaemonRepository, setOnline: SetOnline): DaemonRepository {
  return Object.create(repository, { setOnline: { value: setOnline } });
}

/** Most online writes committed in one transaction. */
const maxBatch = 500;
/** How long the first write of a batch waits for others. */
const batchWindowMs = 5;

/**
 * `setOnline` for many streams at once: calls made while a batch commits wait for the next one,
 * which takes them all (up to {@link maxBatch}) in one transaction, each daemon's in the order
 * they were made. A failed transaction fails every call in it (a stream that cannot be recorded
 * online ends, and its daemon reconnects; a failed "offline" is left to the reconciliation).
 */
function createOnlineWriter(storage: Storage): SetOnline {
  interface Pending {
    readonly args: Parameters<SetOnline>;
    readonly resolve: (changed: boolean) => void;
    readonly reject: (error: unknown) => void;
  }
  let pending: Pending[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    while (pending.length > 0) {
      const batch = pending.slice(0, maxBatch);
      pending = pending.slice(batch.length);
      // Rows locked in one order by every instance: two batches never deadlock. The sort is
      // stable, so the writes of one daemon keep their order.
      batch.sort((a, b) => (a.args[0] < b.args[0] ? -1 : a.args[0] > b.args[0] ? 1 : 0));
      try {
        const results = await storage.transaction(async (tx) => {
          const changed: boolean[] = [];
          for (const { args } of batch) changed.push(await tx.daemons.setOnline(...args));
          return changed;
        });
        for (const [i, item] of batch.entries()) item.resolve(results[i]!);
      } catch (error) {
        for (const item of batch) item.reject(error);
      }
    }
    flushing = false;
  }

  return (...args) =>
    new Promise<boolean>((resolve, reject) => {
      pending.push({ args, resolve, reject });
      if (!flushing) {
        flushing = true;
        // A moment later, so that what arrives together is committed together (on SQLite each
        // signed request's nonce is its own commit, and the opens arrive between them).
        setTimeout(() => void flush(), batchWindowMs);
      }
    });
}

/**
 * Events staged during one operation call and released only once the transaction that staged
 * them has committed. A subscriber must never hear of a change that was rolled back: an
 * operation may retry its transaction (a lost race on a unique index), and the audit entry
 * written by the failed attempt is rolled back with it.
 *
 * Transactions are told apart by the `tx` handle the storage passes to the callback, so nothing
 * here depends on how an adapter runs them. A transaction started while another of the same
 * call is open is taken as nested (a savepoint): its events move to the outer one when it
 * succeeds and are released only when that one commits.
 *
 * @module
 */
import type { Repositories, Storage } from "../storage/storage.js";
import type { EventPayload } from "./event-bus.js";

/** One event waiting for its transaction. */
export interface StagedEvent {
  readonly topic: string;
  readonly payload: EventPayload;
}

interface Frame {
  readonly events: StagedEvent[];
  readonly parent: Frame | undefined;
}

export interface AfterCommitEvents {
  /** The storage the call must use: its transactions are watched. */
  readonly storage: Storage;
  /** Stages an event written with `tx` (a transaction handle, or the storage itself). */
  stage(tx: Repositories, event: StagedEvent): void;
  /** The events whose transactions committed, in the order they were staged. */
  committed(): readonly StagedEvent[];
}

/** Watches the transactions of one call on `storage`. */
export function createAfterCommitEvents(storage: Storage): AfterCommitEvents {
  const released: StagedEvent[] = [];
  const frames = new Map<Repositories, Frame>();
  const open: Frame[] = [];

  async function transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
    const frame: Frame = { events: [], parent: open[open.length - 1] };
    open.push(frame);
    let handle: Repositories | undefined;
    try {
      const result = await storage.transaction((tx) => {
        handle = tx;
        frames.set(tx, frame);
        return fn(tx);
      });
      const target = frame.parent && open.includes(frame.parent) ? frame.parent.events : released;
      target.push(...frame.events);
      return result;
    } finally {
      open.splice(open.indexOf(frame), 1);
      if (handle !== undefined) frames.delete(handle);
    }
  }

  const watched = new Proxy(storage, {
    get(target, property) {
      if (property === "transaction") return transaction;
      const value: unknown = Reflect.get(target, property, target);
      // Methods of class-based adapters keep their own `this`.
      return typeof value === "function" ? value.bind(target) : value;
    },
  });

  return {
    storage: watched,
    stage(tx, event) {
      const frame = frames.get(tx);
      // Written outside any transaction of this call: it is already committed.
      if (frame === undefined) released.push(event);
      else frame.events.push(event);
    },
    committed: () => released,
  };
}

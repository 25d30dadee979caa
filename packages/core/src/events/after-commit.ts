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
 * Every call gets one of these, so it is built to cost little: a class (no closures per call)
 * and a view of the storage that inherits its members from a prototype made once per platform.
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

const noEvents: readonly StagedEvent[] = Object.freeze([]);

/**
 * The after-commit bookkeeping of one platform (`services.state.afterCommit`): made once, with
 * the view of its storage each call inherits from.
 */
export interface AfterCommitWatch {
  /** Watches the transactions of one call. */
  forCall(): AfterCommitEvents;
  /**
   * Stages `event` with the call whose transaction `tx` is, released when it commits. For code
   * that holds only the handle (account audit rows are written by helpers that get `tx`). Outside
   * a platform call (no call watches `tx`) the event is dropped: nobody waits for it.
   */
  stage(tx: Repositories, event: StagedEvent): void;
}

/** The after-commit bookkeeping of a platform over `storage`. */
export function createAfterCommitWatch(storage: Storage): AfterCommitWatch {
  // The call each open transaction handle belongs to.
  const calls = new WeakMap<Repositories, CallEvents>();
  let prototype: object | undefined;
  return {
    forCall() {
      prototype ??= viewPrototype(storage);
      return new CallEvents(storage, prototype, calls);
    },
    stage(tx, event) {
      calls.get(tx)?.stage(tx, event);
    },
  };
}

class CallEvents implements AfterCommitEvents {
  readonly storage: Storage;
  readonly #base: Storage;
  readonly #calls: WeakMap<Repositories, CallEvents>;
  // Most calls never write: the bookkeeping is made on the first transaction.
  #released: StagedEvent[] | undefined;
  #frames: Map<Repositories, Frame> | undefined;
  #open: Frame[] | undefined;

  constructor(base: Storage, prototype: object, calls: WeakMap<Repositories, CallEvents>) {
    this.#base = base;
    this.#calls = calls;
    const view = Object.create(prototype) as { transaction: Storage["transaction"] };
    // Bound, so that a destructured `transaction` still belongs to this call.
    view.transaction = this.transaction.bind(this) as Storage["transaction"];
    this.storage = view as unknown as Storage;
  }

  async transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
    if (this.#open === undefined || this.#frames === undefined) {
      this.#open = [];
      this.#frames = new Map();
    }
    const open = this.#open;
    const frames = this.#frames;
    const frame: Frame = { events: [], parent: open[open.length - 1] };
    open.push(frame);
    let handle: Repositories | undefined;
    try {
      const result = await this.#base.transaction((tx) => {
        handle = tx;
        frames.set(tx, frame);
        this.#calls.set(tx, this);
        return fn(tx);
      });
      const target = frame.parent && open.includes(frame.parent) ? frame.parent.events : this.#releasedList();
      target.push(...frame.events);
      return result;
    } finally {
      open.splice(open.indexOf(frame), 1);
      if (handle !== undefined) {
        frames.delete(handle);
        this.#calls.delete(handle);
      }
    }
  }

  stage(tx: Repositories, event: StagedEvent): void {
    const frame = this.#frames?.get(tx);
    // Written outside any transaction of this call: it is already committed.
    if (frame === undefined) this.#releasedList().push(event);
    else frame.events.push(event);
  }

  #releasedList(): StagedEvent[] {
    if (this.#released === undefined) this.#released = [];
    return this.#released;
  }

  committed(): readonly StagedEvent[] {
    return this.#released ?? noEvents;
  }
}

/**
 * An object that reads every member of `storage` through to it (methods bound to it, so that
 * class-based adapters keep their `this`); a call's view inherits from it and adds its own
 * `transaction`. Made once per platform instead of a Proxy per call.
 */
function viewPrototype(storage: Storage): object {
  const prototype = {};
  const bound = new Map<PropertyKey, { readonly of: unknown; readonly fn: unknown }>();
  for (const key of memberKeys(storage)) {
    if (key === "transaction") continue;
    Object.defineProperty(prototype, key, {
      enumerable: true,
      get() {
        const value: unknown = Reflect.get(storage, key, storage);
        if (typeof value !== "function") return value;
        let entry = bound.get(key);
        if (entry?.of !== value) {
          entry = { of: value, fn: value.bind(storage) };
          bound.set(key, entry);
        }
        return entry.fn;
      },
    });
  }
  return prototype;
}

/** Own and inherited member names of an adapter, up to (not including) Object.prototype. */
function memberKeys(storage: Storage): Set<PropertyKey> {
  const keys = new Set<PropertyKey>();
  for (let o: object | null = storage; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Reflect.ownKeys(o)) if (key !== "constructor") keys.add(key);
  }
  return keys;
}

/**
 * The clock and randomness core runs on. Injected so tests can pin "now" and the bytes a
 * token is made of without patching globals.
 *
 * @module
 */
import { randomBytes as nodeRandomBytes, randomUUID } from "node:crypto";

/** Tells the time. */
export interface Clock {
  now(): Date;
}

/** Produces random bytes and identifiers. */
export interface Random {
  bytes(length: number): Uint8Array;
  uuid(): string;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };

/** The operating system's CSPRNG. */
export const systemRandom: Random = {
  bytes: (length) => new Uint8Array(nodeRandomBytes(length)),
  uuid: () => randomUUID(),
};

/** A clock that stands still until moved; for tests and simulations. */
export function createManualClock(start: Date): Clock & { set(date: Date): void; advance(ms: number): void } {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    set: (date) => {
      current = date.getTime();
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

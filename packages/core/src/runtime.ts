/**
 * The clock and randomness core runs on. Injected so tests can pin "now" and the bytes a
 * token is made of without patching globals.
 *
 * @module
 */
import { randomBytes as nodeRandomBytes, randomFillSync, randomUUID } from "node:crypto";

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

// Small draws (serials, nonces) come from a pooled CSPRNG buffer: one call into OpenSSL per 4 KiB
// instead of one per certificate. Each draw is copied out, so no two callers share bytes.
const pool = new Uint8Array(4096);
let poolOffset = pool.length;

/** The operating system's CSPRNG. */
export const systemRandom: Random = {
  bytes(length) {
    if (length > 256) return new Uint8Array(nodeRandomBytes(length));
    if (poolOffset + length > pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const out = pool.slice(poolOffset, poolOffset + length);
    // Drawn bytes are wiped from the pool, so a later draw can never return them again.
    pool.fill(0, poolOffset, poolOffset + length);
    poolOffset += length;
    return out;
  },
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

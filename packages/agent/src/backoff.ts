/**
 * Reconnect delays: "full jitter" exponential backoff. The n-th consecutive failure waits a
 * uniformly random time in [0, min(cap, base * 2^n)], so a server restart that drops thousands
 * of agents at once sees their reconnects spread over the whole window instead of in waves.
 * Defaults: base 1 s, cap 60 s. A stream the server accepted (its first message arrived) starts
 * the count again.
 *
 * @module
 */

export interface BackoffOptions {
  readonly baseMs?: number;
  readonly capMs?: number;
  /** A number in [0, 1); Math.random by default. */
  readonly random?: () => number;
}

export const defaultBackoff = { baseMs: 1_000, capMs: 60_000 } as const;

export class Backoff {
  readonly #base: number;
  readonly #cap: number;
  readonly #random: () => number;
  #failures = 0;

  constructor(options: BackoffOptions = {}) {
    this.#base = options.baseMs ?? defaultBackoff.baseMs;
    this.#cap = options.capMs ?? defaultBackoff.capMs;
    this.#random = options.random ?? Math.random;
  }

  /** The delay before the next attempt, counting one more failure. */
  next(): number {
    // 2^n stops growing long before it could overflow: the cap is reached first.
    const ceiling = Math.min(this.#cap, this.#base * 2 ** Math.min(this.#failures, 30));
    this.#failures++;
    return Math.floor(this.#random() * ceiling);
  }

  reset(): void {
    this.#failures = 0;
  }
}

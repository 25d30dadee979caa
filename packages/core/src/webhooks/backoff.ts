/**
 * When a failed delivery is tried again: exponential backoff with jitter. The n-th retry waits
 * between half and all of `min(max, base × 2^(n-1))`, so that endpoints failing together do not
 * retry in step.
 *
 * @module
 */

export interface Backoff {
  readonly baseMs: number;
  readonly maxMs: number;
}

/**
 * The wait before the next attempt after `failures` failed ones (1 or more). `draw` is a number
 * in [0, 1): the jitter.
 */
export function retryDelayMs(failures: number, backoff: Backoff, draw: number): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 40);
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * Math.min(Math.max(draw, 0), 1));
}

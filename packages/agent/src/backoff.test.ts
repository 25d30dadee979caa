import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Backoff } from "./backoff.js";

describe("full-jitter backoff", () => {
  it("waits between 0 and min(cap, base * 2^n) after the n-th failure, and starts over after reset", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 600_000 }),
        fc.array(fc.double({ min: 0, max: 0.999_999, noNaN: true }), { minLength: 1, maxLength: 60 }),
        (baseMs, capMs, draws) => {
          let i = 0;
          const backoff = new Backoff({ baseMs, capMs, random: () => draws[i++ % draws.length]! });
          draws.forEach((_, n) => {
            const delay = backoff.next();
            expect(delay).toBeGreaterThanOrEqual(0);
            expect(delay).toBeLessThanOrEqual(Math.min(capMs, baseMs * 2 ** n));
            expect(Number.isInteger(delay)).toBe(true);
          });
          backoff.reset();
          expect(backoff.next()).toBeLessThanOrEqual(baseMs);
        },
      ),
    );
  });

  it("uses the whole window: the largest draw comes close to the ceiling", () => {
    const backoff = new Backoff({ baseMs: 1_000, capMs: 60_000, random: () => 0.999_999 });
    const delays = Array.from({ length: 10 }, () => backoff.next());
    expect(delays.slice(0, 7)).toEqual([999, 1_999, 3_999, 7_999, 15_999, 31_999, 59_999]);
    expect(delays.slice(7)).toEqual([59_999, 59_999, 59_999]);
  });
});

/**
 * Charging profile samples to parts of the request path: by the nearest frame a part claims,
 * idle time left out, shares of the busy time scaled to the measured µs per request; and a real
 * profile of this process, to prove the inspector session round trip.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callBudget, chargeSamples, profileWhile, profileWindow } from "./call-budget.js";

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url },
  children,
});

// root ─┬─ (idle)
//       ├─ (garbage collector)
//       ├─ onStream (http2 core) ─ emit (node:events)
//       ├─ verify (core auth) ─ signOneShot (crypto)
//       └─ runMicrotasks ─ (anon) (no url)
const profile = {
  nodes: [
    frame(1, "(root)", "", [2, 3, 4, 6, 8]),
    frame(2, "(idle)", ""),
    frame(3, "(garbage collector)", ""),
    frame(4, "onStream", "node:internal/http2/core", [5]),
    frame(5, "emit", "node:events"),
    frame(6, "verify", "file:///repo/packages/core/src/auth/authenticate.ts", [7]),
    frame(7, "signOneShot", "node:internal/crypto/sig"),
    frame(8, "runMicrotasks", "", [9]),
    frame(9, "", ""),
  ],
  samples: [2, 2, 2, 3, 5, 5, 7, 9],
  timeDeltas: [100, 100, 100, 100, 100, 100, 100, 100],
};

describe("chargeSamples", () => {
  it("charges each busy sample to the nearest part claiming a frame of its stack", () => {
    const shares = Object.fromEntries(chargeSamples(profile).map(({ part, share }) => [part, share]));
    expect(shares).toEqual({
      "HTTP/2 and streams (Node)": 0.4,
      "garbage collection": 0.2,
      "crypto (signatures, hashes, sealing)": 0.2,
      "other (promises, timers, V8 glue)": 0.2,
    });
  });

  it("lists the largest part first and scales shares to the µs per request", () => {
    const budget = callBudget(profile, 150);
    expect(budget[0]).toEqual({ part: "HTTP/2 and streams (Node)", share: 0.4, microseconds: 60 });
    expect(budget.reduce((sum, part) => sum + part.microseconds, 0)).toBeCloseTo(150);
  });

  it("charges nothing when the profile was idle throughout", () => {
    expect(chargeSamples({ ...profile, samples: [2, 2], timeDeltas: [100, 100] })).toEqual([]);
  });
});

describe("profileWindow", () => {
  it("keeps exactly the samples taken between its bounds, with their own time deltas", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 50 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        (deltas, startTime, a, b) => {
          const [from, to] = [startTime + Math.min(a, b), startTime + Math.max(a, b)];
          const taken = { ...profile, startTime, samples: deltas.map((_, i) => i), timeDeltas: deltas };
          const window = profileWindow(taken, from, to);
          let at = startTime;
          const expected = deltas.flatMap((dt, i) => {
            at += dt;
            return at >= from && at <= to ? [i] : [];
          });
          expect(window.samples).toEqual(expected);
          expect(window.timeDeltas).toEqual(expected.map((i) => deltas[i]));
          expect(window.nodes).toBe(profile.nodes);
        },
      ),
    );
  });
});

describe("profileWhile", () => {
  it("returns a sampled profile of this process taken while the work ran", async () => {
    const work = async () => {
      const until = Date.now() + 200;
      while (Date.now() < until) createHash("sha256").update("x".repeat(4096)).digest();
    };
    const taken = await profileWhile(work);
    expect(taken.samples.length).toBeGreaterThan(10);
    const parts = chargeSamples(taken).map(({ part }) => part);
    expect(parts).toContain("crypto (signatures, hashes, sealing)");
  });
});

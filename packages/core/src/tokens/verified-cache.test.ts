import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cacheVerified } from "./verified-cache.js";

const now = new Date("2030-01-01T00:00:00Z");
const at = (ms: number) => new Date(now.getTime() + ms);

/** A verifier that counts its calls and answers with the token and a fixed expiry. */
function counting(expiresAt: Date | null) {
  const calls: string[] = [];
  const verify = async (token: string) => {
    calls.push(token);
    return { token, expiresAt };
  };
  return { calls, verify };
}

describe("cacheVerified", () => {
  it("verifies a token once while it is valid, and again once it has expired", async () => {
    const inner = counting(at(1000));
    const verify = cacheVerified(inner.verify);
    await verify("a", now);
    await verify("a", at(999));
    expect(inner.calls).toEqual(["a"]);
    await verify("a", at(1000));
    expect(inner.calls).toEqual(["a", "a"]);
  });

  it("keeps a token without expiry until it is pushed out", async () => {
    const inner = counting(null);
    const verify = cacheVerified(inner.verify, 2);
    for (const token of ["a", "a", "b", "a", "c", "a"]) await verify(token, now);
    // "a" is the oldest entry when "c" arrives, so it is verified again after.
    expect(inner.calls).toEqual(["a", "b", "c", "a"]);
  });

  it("answers every token with its own verification and holds at most its bound (oldest out first)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f"), { maxLength: 40 }),
        async (bound, tokens) => {
          const inner = counting(null);
          const verify = cacheVerified(inner.verify, bound);
          // The model: a first-in first-out list of at most `bound` tokens.
          const held: string[] = [];
          const expected: string[] = [];
          for (const token of tokens) {
            expect((await verify(token, now)).token).toBe(token);
            if (held.includes(token)) continue;
            expected.push(token);
            if (held.length === bound) held.shift();
            held.push(token);
          }
          expect(inner.calls).toEqual(expected);
        },
      ),
    );
  });
});

/**
 * The storage contract of login throttles: failures counted atomically, stale ones forgotten.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accountAt, type ContractContext, concurrency, uid } from "./fixtures.js";

export function runLoginThrottleContract(ctx: ContractContext): void {
  loginThrottles(ctx);
}

function loginThrottles(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: linked accounts, throttles, nonces", () => {
    test("loginThrottles: counts failures, remembers the previous one, forgets stale ones", async () => {
      const key = `account:${uid()}@example.com`;
      expect(await storage().loginThrottles.find(key)).toBeNull();
      const first = await storage().loginThrottles.recordFailure(key, at(1), at(-900));
      expect(first).toEqual({ key, failures: 1, lastFailureAt: at(1), previousFailureAt: null });
      const second = await storage().loginThrottles.recordFailure(key, at(2, 2), at(-898));
      expect(second).toEqual({ key, failures: 2, lastFailureAt: at(2, 2), previousFailureAt: at(1) });
      expect(await storage().loginThrottles.find(key)).toEqual(second);
      // The last failure is older than the window: start again.
      const later = await storage().loginThrottles.recordFailure(key, at(5000), at(4100));
      expect(later).toEqual({ key, failures: 1, lastFailureAt: at(5000), previousFailureAt: null });
      await storage().loginThrottles.clear(key);
      expect(await storage().loginThrottles.find(key)).toBeNull();
    });

    test("loginThrottles: concurrent failures each count", async () => {
      const key = `ip:${uid()}`;
      const results = await Promise.all(
        Array.from({ length: concurrency }, (_, i) =>
          storage().loginThrottles.recordFailure(key, at(10, i), at(-1000)),
        ),
      );
      expect(results.map((r) => r.failures).sort((a, b) => a - b)).toEqual(
        Array.from({ length: concurrency }, (_, i) => i + 1),
      );
      expect((await storage().loginThrottles.find(key))?.failures).toBe(concurrency);
    });
  });
}

/**
 * The storage contract of request nonces: claimed once per signer, forgotten once expired.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accountAt, type ContractContext, concurrency, uid } from "./fixtures.js";

export function runRequestNonceContract(ctx: ContractContext): void {
  requestNonces(ctx);
}

function requestNonces(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: linked accounts, throttles, nonces", () => {
    test("requestNonces: a nonce is claimed once per signer, also under concurrency", async () => {
      const signer = uid();
      const nonce = "0123456789abcdef01234567";
      expect(await storage().requestNonces.claim(signer, nonce, at(300), at(0))).toBe(true);
      expect(await storage().requestNonces.claim(signer, nonce, at(300), at(1))).toBe(false);
      expect(await storage().requestNonces.claim(uid(), nonce, at(300), at(1))).toBe(true);
      const fresh = `${uid().replaceAll("-", "").slice(0, 24)}`;
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage().requestNonces.claim(signer, fresh, at(300), at(2)),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    test("requestNonces: an expired nonce is forgotten", async () => {
      const signer = uid();
      const nonce = "fedcba9876543210fedcba98";
      expect(await storage().requestNonces.claim(signer, nonce, at(300), at(0))).toBe(true);
      expect(await storage().requestNonces.claim(signer, nonce, at(900), at(299))).toBe(false);
      expect(await storage().requestNonces.claim(signer, nonce, at(900), at(301))).toBe(true);
    });
  });
}

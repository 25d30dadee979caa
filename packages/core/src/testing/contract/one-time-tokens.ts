/**
 * The storage contract of one-time tokens: consumed once, also under races; expiry; supersession.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accountAt,
  aOneTimeToken,
  type ContractContext,
  concurrency,
  expectUnique,
  newUser,
  uid,
} from "./fixtures.js";

export function runOneTimeTokenContract(ctx: ContractContext): void {
  oneTimeTokenLifecycle(ctx);
}

function oneTimeTokenLifecycle(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: one-time tokens", () => {
    test("oneTimeTokens: consume returns the token once, marked consumed", async () => {
      const user = await newUser(ctx);
      const token = aOneTimeToken(user.id);
      await storage().oneTimeTokens.insert(token);
      expect(await storage().oneTimeTokens.consume("verify_email", token.tokenHash, at(1))).toBeNull();
      expect(await storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(5, 5))).toEqual({
        ...token,
        consumedAt: at(5, 5),
      });
      expect(await storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(6))).toBeNull();
      expect(await storage().oneTimeTokens.consume(token.purpose, `sha256-${uid()}`, at(6))).toBeNull();
    });

    test("oneTimeTokens: a token is dead from the instant it expires", async () => {
      const token = aOneTimeToken(null, { purpose: "passkey_login", expiresAt: at(60) });
      await storage().oneTimeTokens.insert(token);
      expect(await storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(60))).toBeNull();
      const alive = aOneTimeToken(null, { purpose: "passkey_login", expiresAt: at(60) });
      await storage().oneTimeTokens.insert(alive);
      expect(
        await storage().oneTimeTokens.consume(alive.purpose, alive.tokenHash, at(59, 999)),
      ).not.toBeNull();
    });

    test("oneTimeTokens: exactly one of many concurrent consumes wins", async () => {
      const user = await newUser(ctx);
      const token = aOneTimeToken(user.id);
      await storage().oneTimeTokens.insert(token);
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(2)),
        ),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });

    test("oneTimeTokens: latestForUser, deleteForUser and deleteExpired", async () => {
      const user = await newUser(ctx);
      const older = aOneTimeToken(user.id, { purpose: "verify_email", createdAt: at(1) });
      const newer = aOneTimeToken(user.id, { purpose: "verify_email", createdAt: at(2) });
      const spent = aOneTimeToken(user.id, { purpose: "verify_email", createdAt: at(0) });
      const reset = aOneTimeToken(user.id, { purpose: "reset_password", createdAt: at(3) });
      for (const t of [older, newer, spent, reset]) await storage().oneTimeTokens.insert(t);
      await storage().oneTimeTokens.consume("verify_email", spent.tokenHash, at(0, 500));
      expect(await storage().oneTimeTokens.latestForUser(user.id, "verify_email")).toEqual(newer);
      await storage().oneTimeTokens.deleteForUser(user.id, "verify_email");
      // Only unconsumed tokens of that purpose go.
      expect(await storage().oneTimeTokens.latestForUser(user.id, "verify_email")).toMatchObject({
        id: spent.id,
      });
      expect(await storage().oneTimeTokens.latestForUser(user.id, "reset_password")).toEqual(reset);

      const stale = aOneTimeToken(null, { purpose: "passkey_login", expiresAt: at(10) });
      const fresh = aOneTimeToken(null, { purpose: "passkey_login", expiresAt: at(30) });
      const otherPurpose = aOneTimeToken(user.id, { purpose: "passkey_registration", expiresAt: at(10) });
      for (const t of [stale, fresh, otherPurpose]) await storage().oneTimeTokens.insert(t);
      await storage().oneTimeTokens.deleteExpired("passkey_login", at(20));
      expect(await storage().oneTimeTokens.consume("passkey_login", stale.tokenHash, at(5))).toBeNull();
      expect(await storage().oneTimeTokens.consume("passkey_login", fresh.tokenHash, at(5))).not.toBeNull();
      expect(
        await storage().oneTimeTokens.consume("passkey_registration", otherPurpose.tokenHash, at(5)),
      ).not.toBeNull();
    });

    test("oneTimeTokens: a duplicate hash throws UniqueViolationError", async () => {
      const token = aOneTimeToken(null, { purpose: "passkey_login" });
      await storage().oneTimeTokens.insert(token);
      await expectUnique(
        storage().oneTimeTokens.insert(aOneTimeToken(null, { tokenHash: token.tokenHash })),
        "one_time_tokens.token_hash",
      );
    });

    test("oneTimeTokens: a consume inside a rolled-back transaction is undone", async () => {
      const token = aOneTimeToken(null, { purpose: "passkey_login" });
      await storage().oneTimeTokens.insert(token);
      const boom = new Error("boom");
      await expect(
        storage().transaction(async (tx) => {
          expect(await tx.oneTimeTokens.consume(token.purpose, token.tokenHash, at(1))).not.toBeNull();
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(1))).not.toBeNull();
    });
  });
}

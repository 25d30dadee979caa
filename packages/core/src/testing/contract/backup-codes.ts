/**
 * The storage contract of backup codes: each consumed once per user, also under races. Registered
 * by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { aBackupCode, accountAt, type ContractContext, concurrency, newUser } from "./fixtures.js";

export function runBackupCodeContract(ctx: ContractContext): void {
  backupCodes(ctx);
}

function backupCodes(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: passkeys and backup codes", () => {
    test("backupCodes: list, consume once per code and user, delete", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
      const codes = [1, 2, 3].map((i) => aBackupCode(user.id, { createdAt: at(i) }));
      await storage().backupCodes.insertMany(codes);
      await storage().backupCodes.insertMany([]);
      expect(await storage().backupCodes.listByUser(user.id)).toEqual(codes);
      const target = codes[1]!;
      expect(await storage().backupCodes.consume(other.id, target.codeHash, at(5))).toBe(false);
      expect(await storage().backupCodes.consume(user.id, target.codeHash, at(5, 5))).toBe(true);
      expect(await storage().backupCodes.consume(user.id, target.codeHash, at(6))).toBe(false);
      expect((await storage().backupCodes.listByUser(user.id))[1]).toEqual({ ...target, usedAt: at(5, 5) });
      await storage().backupCodes.deleteForUser(user.id);
      expect(await storage().backupCodes.listByUser(user.id)).toEqual([]);
    });

    test("backupCodes: exactly one of many concurrent consumes of a code wins", async () => {
      const user = await newUser(ctx);
      const code = aBackupCode(user.id);
      await storage().backupCodes.insertMany([code]);
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage().backupCodes.consume(user.id, code.codeHash, at(3)),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });
}

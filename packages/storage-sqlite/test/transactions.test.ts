import { randomUUID } from "node:crypto";
import type { UserRecord } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { describe, expect, it } from "vitest";

const user = (): UserRecord => {
  const id = randomUUID();
  return {
    id,
    name: "Grace Hopper",
    username: `grace-${id}`,
    email: `grace-${id}@example.com`,
    emailVerified: true,
    picture: "",
    passwordHash: null,
    enableEmailRecovery: false,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
};

describe("strictTransactions", () => {
  it("off (production): a call on the storage itself inside a transaction joins it, without deadlock", async () => {
    const storage = await createSqliteStorage({ filename: ":memory:", strictTransactions: false });
    try {
      const [kept, dropped] = [user(), user()];
      await storage.transaction(async (tx) => {
        await tx.users.insert(kept);
        // One connection, held by the transaction: the call runs in it rather than wait for it.
        expect(await storage.users.findById(kept.id)).toEqual(kept);
      });
      await expect(
        storage.transaction(async () => {
          await storage.users.insert(dropped);
          throw new Error("abandon");
        }),
      ).rejects.toThrow("abandon");
      expect(await storage.users.findById(kept.id)).toEqual(kept);
      expect(await storage.users.findById(dropped.id)).toBeNull();
    } finally {
      await storage.close();
    }
  });

  it("on: the same call fails, and the transaction can go on through tx", async () => {
    const storage = await createSqliteStorage({ filename: ":memory:", strictTransactions: true });
    try {
      const kept = user();
      await storage.transaction(async (tx) => {
        await tx.users.insert(kept);
        await expect(storage.users.findById(kept.id)).rejects.toThrow(/use the transaction's repositories/);
        expect(await tx.users.findById(kept.id)).toEqual(kept);
      });
      expect(await storage.users.findById(kept.id)).toEqual(kept);
    } finally {
      await storage.close();
    }
  });
});

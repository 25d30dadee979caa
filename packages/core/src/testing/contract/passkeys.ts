/**
 * The storage contract of passkeys: round-trips and changes that stay within their owner.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { accountAt, aPasskey, type ContractContext, expectUnique, newUser } from "./fixtures.js";

export function runPasskeyContract(ctx: ContractContext): void {
  passkeys(ctx);
}

function passkeys(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: passkeys and backup codes", () => {
    test("passkeys: round-trip, list, rename and delete stay within the owner", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
      const first = aPasskey(user.id, { createdAt: at(1) });
      const second = aPasskey(user.id, {
        createdAt: at(2),
        transports: [],
        backedUp: true,
        deviceType: "multiDevice",
        counter: 0,
      });
      await storage().passkeys.insert(second);
      await storage().passkeys.insert(first);
      const stored = await storage().passkeys.findById(first.id);
      expect(stored).toEqual(first);
      expect(stored?.publicKey).toBeInstanceOf(Uint8Array);
      expect(await storage().passkeys.listByUser(user.id)).toEqual([first, second]);
      expect(await storage().passkeys.rename(other.id, first.id, "stolen")).toBeNull();
      expect(await storage().passkeys.rename(user.id, first.id, "Laptop")).toEqual({
        ...first,
        name: "Laptop",
      });
      await storage().passkeys.recordUse(first.id, 4_000_000_001, at(9, 9));
      expect(await storage().passkeys.findById(first.id)).toMatchObject({
        counter: 4_000_000_001,
        lastUsedAt: at(9, 9),
      });
      expect(await storage().passkeys.delete(other.id, first.id)).toBe(false);
      expect(await storage().passkeys.delete(user.id, first.id)).toBe(true);
      expect(await storage().passkeys.listByUser(user.id)).toEqual([second]);
      await expectUnique(storage().passkeys.insert(aPasskey(other.id, { id: second.id })), "passkeys.id");
    });
  });
}

import { describe, expect } from "vitest";
import type { PasskeyRecord } from "../../storage/passkeys.js";
import type { UserRecord } from "../../storage/users.js";
import { aUser, type ContractContext, expectUnique, timeline, uid } from "./fixtures.js";

export function runPasskeyContract(ctx: ContractContext): void {
  passkeys(ctx);
}

function passkeys(ctx: ContractContext): void {
  const { test } = ctx;

  const at = timeline(Date.UTC(2025, 6, 1, 8, 0, 0, 321));

  function aPasskey(userId: string, overrides: Partial<PasskeyRecord> = {}): PasskeyRecord {
    return {
      id: `cred_${uid().replaceAll("-", "")}`,
      userId,
      name: "YubiKey 5 🔑",
      publicKey: new Uint8Array([0xa5, 0x01, 0x02, 0x03, 0x26, 0x00, 0xff]),
      counter: 4_000_000_000, // beyond int32: counters are uint32
      transports: ["usb", "nfc"],
      deviceType: "singleDevice",
      backedUp: false,
      createdAt: at(10, 3),
      lastUsedAt: null,
      ...overrides,
    };
  }

  const storage = () => ctx.storage();

  const newUser = async (overrides: Partial<UserRecord> = {}) => {
    const user = aUser(overrides);
    await storage().users.insert(user);
    return user;
  };

  describe("accounts: passkeys and backup codes", () => {
    test("passkeys: round-trip, list, rename and delete stay within the owner", async () => {
      const user = await newUser();
      const other = await newUser();
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

/**
 * The storage contract of cLI devices and logins: round-trips; a login decided once, also under
 * races. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aCliLogin,
  accountAt,
  aDevice,
  type ContractContext,
  concurrency,
  expectUnique,
  newSession,
  newUser,
  uid,
} from "./fixtures.js";

export function runDeviceContract(ctx: ContractContext): void {
  devicesAndCliLogins(ctx);
}

function devicesAndCliLogins(ctx: ContractContext): void {
  const { test } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: devices and CLI logins", () => {
    test("userDevices: round-trip, list, touch, delete by owner or by id", async () => {
      const user = await newUser(ctx);
      const other = await newUser(ctx);
      const session = await newSession(ctx, user.id);
      const first = aDevice(user.id, session.id, { createdAt: at(1) });
      const second = aDevice(user.id, session.id, { createdAt: at(2), authMethod: "soft" });
      await storage().userDevices.insert(second);
      await storage().userDevices.insert(first);
      expect(await storage().userDevices.findById(first.id)).toEqual(first);
      expect(await storage().userDevices.listByUser(user.id)).toEqual([first, second]);
      await storage().userDevices.touchLastUsed(first.id, at(7, 7));
      expect((await storage().userDevices.findById(first.id))?.lastUsedAt).toEqual(at(7, 7));
      expect(await storage().userDevices.delete(other.id, first.id)).toBe(false);
      expect(await storage().userDevices.delete(user.id, first.id)).toBe(true);
      expect(await storage().userDevices.deleteById(second.id)).toEqual(second);
      expect(await storage().userDevices.deleteById(second.id)).toBeNull();
      await expectUnique(
        (async () => {
          const device = aDevice(user.id, session.id);
          await storage().userDevices.insert(device);
          await storage().userDevices.insert({ ...device, name: "again" });
        })(),
        "user_devices.id",
      );
    });

    test("cliLogins: approve or deny decides once; expired and decided logins are not pending", async () => {
      const user = await newUser(ctx);
      const login = aCliLogin();
      await storage().cliLogins.insert(login);
      expect(await storage().cliLogins.findById(login.id)).toEqual(login);
      expect(await storage().cliLogins.findByCode(login.codeHash)).toEqual(login);
      expect(await storage().cliLogins.findByCode(`sha256-${uid()}`)).toBeNull();
      expect(await storage().cliLogins.approve(uid(), user.id, at(41))).toBeNull();
      const approved = { ...login, approvedBy: user.id, approvedAt: at(41, 1) };
      expect(await storage().cliLogins.approve(login.id, user.id, at(41, 1))).toEqual(approved);
      expect(await storage().cliLogins.approve(login.id, user.id, at(42))).toBeNull();
      expect(await storage().cliLogins.deny(login.id, at(42))).toBeNull();
      expect(await storage().cliLogins.findByCode(login.codeHash)).toEqual(approved);
      expect(await storage().cliLogins.findById(login.id)).toEqual(approved);

      const refused = aCliLogin();
      await storage().cliLogins.insert(refused);
      expect(await storage().cliLogins.recordCodeFailure(refused.id)).toBe(1);
      expect(await storage().cliLogins.recordCodeFailure(refused.id)).toBe(2);
      expect(await storage().cliLogins.deny(refused.id, at(43))).toEqual({
        ...refused,
        codeFailures: 2,
        deniedAt: at(43),
      });
      expect(await storage().cliLogins.approve(refused.id, user.id, at(44))).toBeNull();
      expect((await storage().cliLogins.findByCode(refused.codeHash))?.deniedAt).toEqual(at(43));

      const late = aCliLogin({ expiresAt: at(100) });
      await storage().cliLogins.insert(late);
      expect(await storage().cliLogins.approve(late.id, user.id, at(100))).toBeNull();
      await storage().cliLogins.deleteExpired(at(101));
      expect(await storage().cliLogins.findById(late.id)).toBeNull();
      expect(await storage().cliLogins.findById(login.id)).toEqual(approved);
      await storage().cliLogins.delete(login.id);
      expect(await storage().cliLogins.findById(login.id)).toBeNull();
    });

    test("cliLogins: pending logins are counted per client address", async () => {
      const address = `203.0.113.${Math.floor(Math.random() * 250)}-${uid()}`;
      const logins = [0, 1, 2].map(() => aCliLogin({ ipAddress: address }));
      for (const login of logins) await storage().cliLogins.insert(login);
      await storage().cliLogins.insert(aCliLogin({ ipAddress: address, expiresAt: at(41) }));
      expect(await storage().cliLogins.countPendingFrom(address, at(50))).toBe(3);
      await storage().cliLogins.deny(logins[0]!.id, at(50));
      expect(await storage().cliLogins.countPendingFrom(address, at(51))).toBe(2);
      expect(await storage().cliLogins.countPendingFrom(`${address}-other`, at(51))).toBe(0);
    });

    test("cliLogins: exactly one of many concurrent approvals and refusals wins", async () => {
      const users = await Promise.all(Array.from({ length: 5 }, () => newUser(ctx)));
      const login = aCliLogin();
      await storage().cliLogins.insert(login);
      const results = await Promise.all(
        Array.from({ length: concurrency }, (_, i) =>
          i % 3 === 0
            ? storage().cliLogins.deny(login.id, at(50))
            : storage().cliLogins.approve(login.id, users[i % users.length]!.id, at(50)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(await storage().cliLogins.findById(login.id)).toEqual(winners[0]);
    });
  });
}

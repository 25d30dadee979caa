/**
 * The storage contract of users: round-trips, lookups by email and username (whatever its case),
 * uniqueness. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { aUser, type ContractContext, expectUnique, tag, uid } from "./fixtures.js";

export function runUserContract(ctx: ContractContext): void {
  const { test } = ctx;
  const storage = () => ctx.storage();

  describe("users", () => {
    test("users: every field round-trips by id, email and username", async () => {
      const user = aUser({ name: "Zoë Ünïcødé 名前 🚀", picture: "" });
      await storage().users.insert(user);
      expect(await storage().users.findById(user.id)).toEqual(user);
      expect(await storage().users.findByEmail(user.email)).toEqual(user);
      expect(await storage().users.findByUsername(user.username)).toEqual(user);
    });

    test("users: null passwordHash and false flags round-trip", async () => {
      const user = aUser({ passwordHash: null, emailVerified: false, enableEmailRecovery: true });
      await storage().users.insert(user);
      expect(await storage().users.findById(user.id)).toEqual(user);
    });

    test("users: findByEmail lower-cases the lookup", async () => {
      const user = aUser();
      await storage().users.insert(user);
      expect((await storage().users.findByEmail(user.email.toUpperCase()))?.id).toBe(user.id);
    });

    test("users: not found returns null", async () => {
      expect(await storage().users.findById(uid())).toBeNull();
      expect(await storage().users.findByEmail(`nobody-${tag()}@example.com`)).toBeNull();
      expect(await storage().users.findByUsername(`nobody-${tag()}`)).toBeNull();
    });

    test("users: duplicate email, username or id throws UniqueViolationError and changes nothing", async () => {
      const user = aUser();
      await storage().users.insert(user);
      const sameEmail = aUser({ email: user.email });
      await expectUnique(storage().users.insert(sameEmail), "users.email");
      const sameUsername = aUser({ username: user.username });
      await expectUnique(storage().users.insert(sameUsername), "users.username");
      await expectUnique(storage().users.insert(aUser({ id: user.id })), "users.id");
      expect(await storage().users.findById(sameEmail.id)).toBeNull();
      expect(await storage().users.findById(sameUsername.id)).toBeNull();
      expect(await storage().users.findById(user.id)).toEqual(user);
    });

    test("users: usernames are one whatever their case, for lookups and for uniqueness", async () => {
      const user = aUser({ username: `Ada-${tag()}` });
      await storage().users.insert(user);
      expect((await storage().users.findByUsername(user.username.toLowerCase()))?.id).toBe(user.id);
      expect((await storage().users.findByUsername(user.username.toUpperCase()))?.id).toBe(user.id);
      const shouted = aUser({ username: user.username.toUpperCase() });
      await expectUnique(storage().users.insert(shouted), "users.username");
      const other = aUser();
      await storage().users.insert(other);
      await expectUnique(
        storage().users.update(other.id, { username: user.username.toLowerCase() }, new Date()),
        "users.username",
      );
      expect(await storage().users.findById(shouted.id)).toBeNull();
    });
  });
}

/**
 * The storage contract of users: round-trips, lookups by email and username (whatever its case),
 * uniqueness. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aBackupCode,
  aCliLogin,
  accountAt,
  aDevice,
  aLinkedAccount,
  aOneTimeToken,
  aPasskey,
  aUser,
  type ContractContext,
  expectUnique,
  newSession,
  newUser,
  tag,
  uid,
} from "./fixtures.js";

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

  updatesAndCascades(ctx);
}

function updatesAndCascades(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = accountAt;

  const storage = () => ctx.storage();

  describe("accounts: users, sessions, members", () => {
    test("users.update: changes only the given fields and lower-cases the email", async () => {
      const user = await newUser(ctx, { emailVerified: true, passwordHash: "$argon2id$old" });
      const updated = await storage().users.update(
        user.id,
        { name: "Ada King", email: "Ada.King@Example.COM", emailVerified: false },
        at(99, 9),
      );
      const expected = {
        ...user,
        name: "Ada King",
        email: "ada.king@example.com",
        emailVerified: false,
        updatedAt: at(99, 9),
      };
      expect(updated).toEqual(expected);
      expect(await storage().users.findById(user.id)).toEqual(expected);
      const cleared = await storage().users.update(
        user.id,
        { passwordHash: null, enableEmailRecovery: true },
        at(100),
      );
      expect(cleared).toMatchObject({ passwordHash: null, enableEmailRecovery: true, name: "Ada King" });
      expect(await storage().users.update(uid(), { name: "nobody" }, at(1))).toBeNull();
    });

    test("users.update: a taken username or email throws UniqueViolationError and changes nothing", async () => {
      const a = await newUser(ctx);
      const b = await newUser(ctx);
      await expectUnique(storage().users.update(b.id, { username: a.username }, at(5)), "users.username");
      await expectUnique(
        storage().users.update(b.id, { email: a.email.toUpperCase() }, at(5)),
        "users.email",
      );
      expect(await storage().users.findById(b.id)).toEqual(b);
    });

    test("users.delete: cascades to memberships, sessions, credentials, devices, tokens and links", async () => {
      const { user, workspace } = await seedWorkspace();
      const other = await newUser(ctx);
      const session = await newSession(ctx, user.id);
      const passkey = aPasskey(user.id);
      await storage().passkeys.insert(passkey);
      await storage().backupCodes.insertMany([aBackupCode(user.id)]);
      const device = aDevice(user.id, session.id);
      await storage().userDevices.insert(device);
      const token = aOneTimeToken(user.id);
      await storage().oneTimeTokens.insert(token);
      await storage().linkedAccounts.insert(aLinkedAccount(user.id));
      const login = aCliLogin();
      await storage().cliLogins.insert(login);
      expect(await storage().cliLogins.approve(login.id, user.id, at(41))).not.toBeNull();
      const keep = await newSession(ctx, other.id);

      expect(await storage().users.delete(user.id)).toBe(true);
      expect(await storage().users.delete(user.id)).toBe(false);
      expect(await storage().users.findById(user.id)).toBeNull();
      expect(await storage().members.find(workspace.id, user.id)).toBeNull();
      expect(await storage().authSessions.findById(session.id)).toBeNull();
      expect(await storage().passkeys.findById(passkey.id)).toBeNull();
      expect(await storage().backupCodes.listByUser(user.id)).toEqual([]);
      expect(await storage().userDevices.findById(device.id)).toBeNull();
      expect(await storage().oneTimeTokens.latestForUser(user.id, token.purpose)).toBeNull();
      expect(await storage().linkedAccounts.listByUser(user.id)).toEqual([]);
      expect(await storage().cliLogins.findById(login.id)).toBeNull();
      // The workspace itself stays (deleting it is a separate decision).
      expect(await storage().workspaces.findById(workspace.id)).toEqual(workspace);
      expect(await storage().authSessions.findById(keep.id)).toEqual(keep);
    });
  });
}

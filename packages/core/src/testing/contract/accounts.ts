/**
 * The storage contract of the account repositories (`@wap/core/storage` accounts.ts) and of the
 * account methods of users, sessions and members. Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { BackupCodeRecord } from "../../storage/backup-codes.js";
import type { CliLoginRecord, UserDeviceRecord } from "../../storage/devices.js";
import type { LinkedAccountRecord } from "../../storage/linked-accounts.js";
import type { MemberRecord } from "../../storage/members.js";
import type { OneTimeTokenRecord } from "../../storage/one-time-tokens.js";
import type { PasskeyRecord } from "../../storage/passkeys.js";
import type { AuthSessionRecord } from "../../storage/sessions.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface AccountContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (
    s?: Repositories,
  ) => Promise<{ user: UserRecord; workspace: WorkspaceRecord; member: MemberRecord }>;
  readonly aUser: (overrides?: Partial<UserRecord>) => UserRecord;
  readonly aSession: (userId: string, overrides?: Partial<AuthSessionRecord>) => AuthSessionRecord;
  readonly aMember: (workspaceId: string, userId: string, overrides?: Partial<MemberRecord>) => MemberRecord;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2025, 6, 1, 8, 0, 0, 321);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const concurrency = 20;

function aToken(userId: string | null, overrides: Partial<OneTimeTokenRecord> = {}): OneTimeTokenRecord {
  return {
    id: uid(),
    purpose: "reset_password",
    tokenHash: `sha256-${uid()}`,
    userId,
    data: { email: "ada@example.com", note: "ünïcødé ✓" },
    createdAt: at(0, 1),
    expiresAt: at(3600, 2),
    consumedAt: null,
    ...overrides,
  };
}

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

function aBackupCode(userId: string, overrides: Partial<BackupCodeRecord> = {}): BackupCodeRecord {
  return { id: uid(), userId, codeHash: `sha256-${uid()}`, createdAt: at(20, 4), usedAt: null, ...overrides };
}

function aDevice(
  userId: string,
  sessionId: string,
  overrides: Partial<UserDeviceRecord> = {},
): UserDeviceRecord {
  return {
    id: uid(),
    userId,
    sessionId,
    name: "ada-laptop",
    authMethod: "tpm",
    publicKey: "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
    createdAt: at(30, 5),
    expiresAt: at(30 + 7_776_000, 6),
    lastUsedAt: null,
    ...overrides,
  };
}

function aCliLogin(overrides: Partial<CliLoginRecord> = {}): CliLoginRecord {
  return {
    id: uid(),
    codeHash: `sha256-${uid()}`,
    deviceId: uid(),
    deviceName: "build-box",
    authMethod: "soft",
    publicKey: "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n",
    ipAddress: "198.51.100.7",
    userAgent: "platform-cli/1.0",
    createdAt: at(40, 7),
    expiresAt: at(640, 8),
    approvedBy: null,
    approvedAt: null,
    userCodeHash: `sha256-${uid()}`,
    codeFailures: 0,
    deniedAt: null,
    clientOs: "linux/x64",
    clientVersion: "1.2.3",
    ...overrides,
  };
}

function aLinkedAccount(userId: string, overrides: Partial<LinkedAccountRecord> = {}): LinkedAccountRecord {
  return {
    userId,
    provider: `github-${uid().slice(0, 8)}`,
    providerId: uid(),
    providerEmail: "ada@users.noreply.example.com",
    providerUsername: "ada",
    protocol: "oauth",
    createdAt: at(50, 9),
    ...overrides,
  };
}

/** Registers the account tests inside the running contract suite. */
export function runAccountContract(ctx: AccountContractContext): void {
  const { test, aUser, aSession, aMember, seedWorkspace, expectUnique } = ctx;
  const storage = () => ctx.storage();
  const newUser = async (overrides: Partial<UserRecord> = {}) => {
    const user = aUser(overrides);
    await storage().users.insert(user);
    return user;
  };
  const newSession = async (userId: string, overrides: Partial<AuthSessionRecord> = {}) => {
    const session = aSession(userId, overrides);
    await storage().authSessions.insert(session);
    return session;
  };

  describe("accounts: users, sessions, members", () => {
    test("users.update: changes only the given fields and lower-cases the email", async () => {
      const user = await newUser({ emailVerified: true, passwordHash: "$argon2id$old" });
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
      const a = await newUser();
      const b = await newUser();
      await expectUnique(storage().users.update(b.id, { username: a.username }, at(5)), "users.username");
      await expectUnique(
        storage().users.update(b.id, { email: a.email.toUpperCase() }, at(5)),
        "users.email",
      );
      expect(await storage().users.findById(b.id)).toEqual(b);
    });

    test("users.delete: cascades to memberships, sessions, credentials, devices, tokens and links", async () => {
      const { user, workspace } = await seedWorkspace();
      const other = await newUser();
      const session = await newSession(user.id);
      const passkey = aPasskey(user.id);
      await storage().passkeys.insert(passkey);
      await storage().backupCodes.insertMany([aBackupCode(user.id)]);
      const device = aDevice(user.id, session.id);
      await storage().userDevices.insert(device);
      const token = aToken(user.id);
      await storage().oneTimeTokens.insert(token);
      await storage().linkedAccounts.insert(aLinkedAccount(user.id));
      const login = aCliLogin();
      await storage().cliLogins.insert(login);
      expect(await storage().cliLogins.approve(login.id, user.id, at(41))).not.toBeNull();
      const keep = await newSession(other.id);

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

    test("authSessions: listActiveForUser skips revoked, expired and other users' sessions", async () => {
      const user = await newUser();
      const other = await newUser();
      const live1 = await newSession(user.id, { createdAt: at(1), expiresAt: at(1000) });
      const live2 = await newSession(user.id, { createdAt: at(2), expiresAt: at(1000) });
      const revoked = await newSession(user.id, { createdAt: at(3), expiresAt: at(1000) });
      await storage().authSessions.revoke(revoked.id, at(4));
      await newSession(user.id, { createdAt: at(0), expiresAt: at(500) });
      await newSession(other.id);
      expect(await storage().authSessions.listActiveForUser(user.id, at(500))).toEqual([live1, live2]);
    });

    test("authSessions: revokeAllForUser spares the excepted session and other users", async () => {
      const user = await newUser();
      const other = await newUser();
      const keep = await newSession(user.id);
      const drop1 = await newSession(user.id);
      const drop2 = await newSession(user.id);
      await storage().authSessions.revoke(drop2.id, at(1));
      const theirs = await newSession(other.id);
      await storage().authSessions.revokeAllForUser(user.id, at(7), keep.id);
      expect((await storage().authSessions.findById(keep.id))?.revokedAt).toBeNull();
      expect((await storage().authSessions.findById(drop1.id))?.revokedAt).toEqual(at(7));
      // An earlier revocation time stands.
      expect((await storage().authSessions.findById(drop2.id))?.revokedAt).toEqual(at(1));
      expect((await storage().authSessions.findById(theirs.id))?.revokedAt).toBeNull();
      await storage().authSessions.revokeAllForUser(user.id, at(8));
      expect((await storage().authSessions.findById(keep.id))?.revokedAt).toEqual(at(8));
    });

    test("members: listSoleOwnerships names only workspaces with no other owner", async () => {
      const { user, workspace: alone } = await seedWorkspace();
      const shared = await seedWorkspace();
      await storage().members.insert(aMember(shared.workspace.id, user.id, { role: "owner" }));
      const asAdmin = await seedWorkspace();
      await storage().members.insert(aMember(asAdmin.workspace.id, user.id, { role: "admin" }));
      expect(await storage().members.listSoleOwnerships(user.id)).toEqual([alone.id]);
      expect(await storage().members.listSoleOwnerships(shared.user.id)).toEqual([]);
      expect(await storage().members.listSoleOwnerships(uid())).toEqual([]);
    });
  });

  describe("accounts: one-time tokens", () => {
    test("oneTimeTokens: consume returns the token once, marked consumed", async () => {
      const user = await newUser();
      const token = aToken(user.id);
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
      const token = aToken(null, { purpose: "passkey_login", expiresAt: at(60) });
      await storage().oneTimeTokens.insert(token);
      expect(await storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(60))).toBeNull();
      const alive = aToken(null, { purpose: "passkey_login", expiresAt: at(60) });
      await storage().oneTimeTokens.insert(alive);
      expect(
        await storage().oneTimeTokens.consume(alive.purpose, alive.tokenHash, at(59, 999)),
      ).not.toBeNull();
    });

    test("oneTimeTokens: exactly one of many concurrent consumes wins", async () => {
      const user = await newUser();
      const token = aToken(user.id);
      await storage().oneTimeTokens.insert(token);
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage().oneTimeTokens.consume(token.purpose, token.tokenHash, at(2)),
        ),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
    });

    test("oneTimeTokens: latestForUser, deleteForUser and deleteExpired", async () => {
      const user = await newUser();
      const older = aToken(user.id, { purpose: "verify_email", createdAt: at(1) });
      const newer = aToken(user.id, { purpose: "verify_email", createdAt: at(2) });
      const spent = aToken(user.id, { purpose: "verify_email", createdAt: at(0) });
      const reset = aToken(user.id, { purpose: "reset_password", createdAt: at(3) });
      for (const t of [older, newer, spent, reset]) await storage().oneTimeTokens.insert(t);
      await storage().oneTimeTokens.consume("verify_email", spent.tokenHash, at(0, 500));
      expect(await storage().oneTimeTokens.latestForUser(user.id, "verify_email")).toEqual(newer);
      await storage().oneTimeTokens.deleteForUser(user.id, "verify_email");
      // Only unconsumed tokens of that purpose go.
      expect(await storage().oneTimeTokens.latestForUser(user.id, "verify_email")).toMatchObject({
        id: spent.id,
      });
      expect(await storage().oneTimeTokens.latestForUser(user.id, "reset_password")).toEqual(reset);

      const stale = aToken(null, { purpose: "passkey_login", expiresAt: at(10) });
      const fresh = aToken(null, { purpose: "passkey_login", expiresAt: at(30) });
      const otherPurpose = aToken(user.id, { purpose: "passkey_registration", expiresAt: at(10) });
      for (const t of [stale, fresh, otherPurpose]) await storage().oneTimeTokens.insert(t);
      await storage().oneTimeTokens.deleteExpired("passkey_login", at(20));
      expect(await storage().oneTimeTokens.consume("passkey_login", stale.tokenHash, at(5))).toBeNull();
      expect(await storage().oneTimeTokens.consume("passkey_login", fresh.tokenHash, at(5))).not.toBeNull();
      expect(
        await storage().oneTimeTokens.consume("passkey_registration", otherPurpose.tokenHash, at(5)),
      ).not.toBeNull();
    });

    test("oneTimeTokens: a duplicate hash throws UniqueViolationError", async () => {
      const token = aToken(null, { purpose: "passkey_login" });
      await storage().oneTimeTokens.insert(token);
      await expectUnique(
        storage().oneTimeTokens.insert(aToken(null, { tokenHash: token.tokenHash })),
        "one_time_tokens.token_hash",
      );
    });

    test("oneTimeTokens: a consume inside a rolled-back transaction is undone", async () => {
      const token = aToken(null, { purpose: "passkey_login" });
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

    test("backupCodes: list, consume once per code and user, delete", async () => {
      const user = await newUser();
      const other = await newUser();
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
      const user = await newUser();
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

  describe("accounts: devices and CLI logins", () => {
    test("userDevices: round-trip, list, touch, delete by owner or by id", async () => {
      const user = await newUser();
      const other = await newUser();
      const session = await newSession(user.id);
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
      const user = await newUser();
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
      const users = await Promise.all(Array.from({ length: 5 }, () => newUser()));
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

  describe("accounts: linked accounts, throttles, nonces", () => {
    test("linkedAccounts: list and delete by provider; one link per provider and identity", async () => {
      const user = await newUser();
      const other = await newUser();
      const github = aLinkedAccount(user.id, { provider: "github", createdAt: at(1) });
      const google = aLinkedAccount(user.id, { provider: "google", protocol: "oidc", createdAt: at(2) });
      await storage().linkedAccounts.insert(google);
      await storage().linkedAccounts.insert(github);
      expect(await storage().linkedAccounts.listByUser(user.id)).toEqual([github, google]);
      await expectUnique(
        storage().linkedAccounts.insert(aLinkedAccount(user.id, { provider: "github" })),
        "linked_accounts.provider",
      );
      await expectUnique(
        storage().linkedAccounts.insert(
          aLinkedAccount(other.id, { provider: "github", providerId: github.providerId }),
        ),
        "linked_accounts.provider_id",
      );
      expect(await storage().linkedAccounts.delete(other.id, "github")).toBe(false);
      expect(await storage().linkedAccounts.delete(user.id, "github")).toBe(true);
      expect(await storage().linkedAccounts.listByUser(user.id)).toEqual([google]);
    });

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

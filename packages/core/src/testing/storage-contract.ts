/**
 * The storage contract: one vitest suite that every storage adapter runs. It proves the rules
 * written in the JSDoc of `@wap/core/storage` (null for not found, tenant isolation, uniqueness,
 * transactions, atomic one-time operations, cascades, paging and filters).
 *
 * Tests never assume an empty database: every row they write has fresh ids and names, so an
 * adapter may hand out the same database to every test.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import * as fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AuditEventRecord } from "../storage/audit.js";
import type { CertificateAuthorityRecord } from "../storage/certificate-authorities.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { MemberRecord } from "../storage/members.js";
import type { SecretRecord } from "../storage/secrets.js";
import type { ServiceAccountRecord } from "../storage/service-accounts.js";
import type { AuthSessionRecord, RefreshTokenRecord } from "../storage/sessions.js";
import { type Repositories, type Storage, UniqueViolationError } from "../storage/storage.js";
import type { UserRecord } from "../storage/users.js";
import type { WorkspaceRecord } from "../storage/workspaces.js";
import { runAccountContract } from "./contract/accounts.js";
import { runCertificateContract } from "./contract/certificates.js";
import { runDaemonContract } from "./contract/daemons.js";
import { runRecordingContract } from "./contract/recordings.js";
import { runSsoBillingContract } from "./contract/sso-billing.js";
import { runWorkspaceAccessContract } from "./contract/workspace-access.js";

/** How an adapter's test file wires the contract. */
export interface StorageContractOptions {
  /** Shown in the suite name, e.g. "sqlite (:memory:)". */
  readonly name: string;
  /** A ready storage; called before every test, and closed after it. */
  readonly create: () => Promise<Storage>;
  /** Known gaps: tests (by exact name) the adapter does not pass, and why. Unknown names fail. */
  readonly skip?: ReadonlyArray<{ readonly reason: string; readonly tests: readonly string[] }>;
}

// --- fixtures --------------------------------------------------------------------------------

const base = Date.UTC(2024, 1, 29, 12, 34, 56, 789);
/** A time with milliseconds, `seconds` after the base. */
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
/** A short unique suffix for names that must not collide across tests sharing a database. */
const tag = () => randomUUID().slice(0, 8);

function aUser(overrides: Partial<UserRecord> = {}): UserRecord {
  const t = tag();
  return {
    id: uid(),
    name: `Ada Lovelace ${t}`,
    username: `ada-${t}`,
    email: `ada-${t}@example.com`,
    emailVerified: true,
    picture: "https://example.com/ada.png",
    passwordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
    enableEmailRecovery: false,
    createdAt: at(0, 1),
    updatedAt: at(1, 2),
    ...overrides,
  };
}

function aWorkspace(createdBy: string, overrides: Partial<WorkspaceRecord> = {}): WorkspaceRecord {
  return {
    id: uid(),
    name: `workspace ${tag()}`,
    description: "the team's servers",
    createdBy,
    enrollAutoApprove: false,
    enrollExpiresAt: null,
    inviteExpiresAt: null,
    createdAt: at(10, 3),
    updatedAt: at(10, 3),
    ...overrides,
  };
}

function aMember(workspaceId: string, userId: string, overrides: Partial<MemberRecord> = {}): MemberRecord {
  return { workspaceId, userId, role: "editor", createdAt: at(20, 4), updatedAt: at(21, 5), ...overrides };
}

function anAuthority(
  workspaceId: string,
  overrides: Partial<CertificateAuthorityRecord> = {},
): CertificateAuthorityRecord {
  return {
    id: uid(),
    workspaceId,
    name: `ca ${tag()}`,
    description: "signs user certificates",
    authorityType: "ssh",
    keyType: "ed25519",
    keyBits: 256,
    certificate: "",
    publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    serialNumber: "0a1b2c3d",
    subject: "CN=test",
    notBefore: at(30, 6),
    notAfter: at(30 + 86_400, 7),
    isActive: true,
    isDefault: false,
    allowedKeyTypes: ["ed25519", "ecdsa"],
    lifetimeSeconds: 3_153_600_000, // a century: more than a 32-bit integer holds
    userDefaultTtlSeconds: 3600,
    userMaxTtlSeconds: 86_400,
    hostDefaultTtlSeconds: 7200,
    hostMaxTtlSeconds: 2_592_000,
    userExtensions: { "permit-pty": "", "permit-port-forwarding": "" },
    userCriticalOptions: { "source-address": "10.0.0.0/8" },
    sealedPrivateKey: new Uint8Array([0, 1, 2, 127, 128, 254, 255, 0]),
    keyVersion: 1,
    keyStorage: "software",
    rotationPhase: "none",
    nextKey: null,
    createdAt: at(31, 8),
    updatedAt: at(31, 8),
    ...overrides,
  };
}

function aServiceAccount(
  workspaceId: string,
  overrides: Partial<ServiceAccountRecord> = {},
): ServiceAccountRecord {
  return {
    id: uid(),
    workspaceId,
    name: `deploy-bot ${tag()}`,
    description: "ships the releases",
    role: "editor",
    tags: ["ci", "prod"],
    tokenHash: `hash-${uid()}`,
    expiresAt: at(40 + 86_400, 9),
    lastUsedAt: null,
    createdAt: at(40, 10),
    updatedAt: at(40, 10),
    ...overrides,
  };
}

function aDaemon(workspaceId: string, overrides: Partial<DaemonRecord> = {}): DaemonRecord {
  return {
    id: uid(),
    workspaceId,
    targetId: null,
    name: `host-${tag()}`,
    status: "pending",
    recordSessions: false,
    metadata: { os: "linux", arch: "x86_64" },
    authPublicKey: "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n",
    authMethod: "token",
    onlineSince: null,
    createdAt: at(50, 11),
    updatedAt: at(50, 11),
    ...overrides,
  };
}

function anAuditEvent(
  workspaceId: string | null,
  overrides: Partial<AuditEventRecord> = {},
): AuditEventRecord {
  return {
    id: uid(),
    workspaceId,
    actorId: uid(),
    actorType: "user",
    action: "certificate_authority.create",
    resource: `certificate_authority:${uid()}`,
    ipAddress: "192.0.2.1",
    userAgent: "curl/8.0",
    statusCode: "ok",
    requestId: uid(),
    timestamp: at(60, 12),
    ...overrides,
  };
}

function aSession(userId: string, overrides: Partial<AuthSessionRecord> = {}): AuthSessionRecord {
  return {
    id: uid(),
    userId,
    createdAt: at(70, 13),
    expiresAt: at(70 + 2_592_000, 14),
    revokedAt: null,
    ipAddress: "2001:db8::1",
    userAgent: "Mozilla/5.0",
    ...overrides,
  };
}

function aRefreshToken(sessionId: string, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  return {
    id: uid(),
    sessionId,
    tokenHash: `sha256-${uid()}`,
    createdAt: at(80, 15),
    expiresAt: at(80 + 86_400, 16),
    rotatedAt: null,
    ...overrides,
  };
}

function aSecret(overrides: Partial<SecretRecord> = {}): SecretRecord {
  return {
    name: `signing-key-${uid()}`,
    sealed: new Uint8Array([9, 8, 7, 0, 255]),
    createdAt: at(90, 17),
    ...overrides,
  };
}

/** Resolves to the rejection of `promise` (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

async function expectUnique(promise: Promise<unknown>, constraint: string): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(UniqueViolationError);
  expect((error as UniqueViolationError).constraint).toBe(constraint);
}

/** Well-formed Unicode without U+0000 (which PostgreSQL text cannot hold; core rejects it). */
const unicodeText = (maxLength: number) =>
  fc.string({ unit: "binary", maxLength }).filter((s) => !s.includes("\u0000"));

// --- the suite -------------------------------------------------------------------------------

/**
 * Registers the storage contract suite.
 *
 * @example
 * ```ts
 * runStorageContract({ name: "sqlite", create: () => createSqliteStorage({ filename: ":memory:" }) });
 * ```
 */
export function runStorageContract(options: StorageContractOptions): void {
  const skipped = new Map<string, string>();
  for (const gap of options.skip ?? []) for (const name of gap.tests) skipped.set(name, gap.reason);
  const registered = new Set<string>();

  describe(`storage contract: ${options.name}`, () => {
    let storage: Storage;
    beforeEach(async () => {
      storage = await options.create();
    });
    afterEach(async () => {
      await storage?.close();
    });

    const test = (name: string, fn: () => Promise<void>, timeout?: number) => {
      if (registered.has(name)) throw new Error(`duplicate contract test name: ${name}`);
      registered.add(name);
      const reason = skipped.get(name);
      if (reason === undefined) it(name, fn, timeout);
      else it.skip(`${name} (skipped: ${reason})`, fn);
    };

    /** A user, a workspace it created and its owner membership. */
    async function seedWorkspace(s: Repositories = storage) {
      const user = aUser();
      await s.users.insert(user);
      const workspace = aWorkspace(user.id);
      await s.workspaces.insert(workspace);
      const member = aMember(workspace.id, user.id, { role: "owner" });
      await s.members.insert(member);
      return { user, workspace, member };
    }

    describe("users", () => {
      test("users: every field round-trips by id, email and username", async () => {
        const user = aUser({ name: "Zoë Ünïcødé 名前 🚀", picture: "" });
        await storage.users.insert(user);
        expect(await storage.users.findById(user.id)).toEqual(user);
        expect(await storage.users.findByEmail(user.email)).toEqual(user);
        expect(await storage.users.findByUsername(user.username)).toEqual(user);
      });

      test("users: null passwordHash and false flags round-trip", async () => {
        const user = aUser({ passwordHash: null, emailVerified: false, enableEmailRecovery: true });
        await storage.users.insert(user);
        expect(await storage.users.findById(user.id)).toEqual(user);
      });

      test("users: findByEmail lower-cases the lookup", async () => {
        const user = aUser();
        await storage.users.insert(user);
        expect((await storage.users.findByEmail(user.email.toUpperCase()))?.id).toBe(user.id);
      });

      test("users: not found returns null", async () => {
        expect(await storage.users.findById(uid())).toBeNull();
        expect(await storage.users.findByEmail(`nobody-${tag()}@example.com`)).toBeNull();
        expect(await storage.users.findByUsername(`nobody-${tag()}`)).toBeNull();
      });

      test("users: duplicate email, username or id throws UniqueViolationError and changes nothing", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const sameEmail = aUser({ email: user.email });
        await expectUnique(storage.users.insert(sameEmail), "users.email");
        const sameUsername = aUser({ username: user.username });
        await expectUnique(storage.users.insert(sameUsername), "users.username");
        await expectUnique(storage.users.insert(aUser({ id: user.id })), "users.id");
        expect(await storage.users.findById(sameEmail.id)).toBeNull();
        expect(await storage.users.findById(sameUsername.id)).toBeNull();
        expect(await storage.users.findById(user.id)).toEqual(user);
      });

      test("users: usernames are one whatever their case, for lookups and for uniqueness", async () => {
        const user = aUser({ username: `Ada-${tag()}` });
        await storage.users.insert(user);
        expect((await storage.users.findByUsername(user.username.toLowerCase()))?.id).toBe(user.id);
        expect((await storage.users.findByUsername(user.username.toUpperCase()))?.id).toBe(user.id);
        const shouted = aUser({ username: user.username.toUpperCase() });
        await expectUnique(storage.users.insert(shouted), "users.username");
        const other = aUser();
        await storage.users.insert(other);
        await expectUnique(
          storage.users.update(other.id, { username: user.username.toLowerCase() }, new Date()),
          "users.username",
        );
        expect(await storage.users.findById(shouted.id)).toBeNull();
      });
    });

    describe("auth sessions and refresh tokens", () => {
      test("authSessions: round-trip, not found, revoke is idempotent", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const session = aSession(user.id, { ipAddress: "", userAgent: "agent ✓" });
        await storage.authSessions.insert(session);
        expect(await storage.authSessions.findById(session.id)).toEqual(session);
        expect(await storage.authSessions.findById(uid())).toBeNull();

        await storage.authSessions.revoke(session.id, at(100, 1));
        expect((await storage.authSessions.findById(session.id))?.revokedAt).toEqual(at(100, 1));
        await storage.authSessions.revoke(session.id, at(200, 2));
        expect(await storage.authSessions.findById(session.id)).toEqual({
          ...session,
          revokedAt: at(100, 1),
        });
        await expect(storage.authSessions.revoke(uid(), at(1))).resolves.toBeUndefined();
      });

      test("refreshTokens: round-trip, not found, duplicate hash", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const session = aSession(user.id);
        await storage.authSessions.insert(session);
        const token = aRefreshToken(session.id);
        await storage.refreshTokens.insert(token);
        expect(await storage.refreshTokens.findByHash(token.tokenHash)).toEqual(token);
        expect(await storage.refreshTokens.findByHash(`sha256-${uid()}`)).toBeNull();
        const duplicate = aRefreshToken(session.id, { tokenHash: token.tokenHash });
        await expectUnique(storage.refreshTokens.insert(duplicate), "refresh_tokens.token_hash");
        expect(await storage.refreshTokens.findByHash(token.tokenHash)).toEqual(token);
      });

      test("refreshTokens: markRotated is true once, then false; unknown ids are false", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const session = aSession(user.id);
        await storage.authSessions.insert(session);
        const token = aRefreshToken(session.id);
        await storage.refreshTokens.insert(token);
        expect(await storage.refreshTokens.markRotated(token.id, at(300, 3))).toBe(true);
        expect(await storage.refreshTokens.markRotated(token.id, at(400, 4))).toBe(false);
        expect((await storage.refreshTokens.findByHash(token.tokenHash))?.rotatedAt).toEqual(at(300, 3));
        expect(await storage.refreshTokens.markRotated(uid(), at(1))).toBe(false);
      });

      test("refreshTokens: markRotated is true for exactly one of 20 concurrent calls", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const session = aSession(user.id);
        await storage.authSessions.insert(session);
        const token = aRefreshToken(session.id);
        await storage.refreshTokens.insert(token);
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => storage.refreshTokens.markRotated(token.id, at(500 + i))),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = results.indexOf(true);
        expect((await storage.refreshTokens.findByHash(token.tokenHash))?.rotatedAt).toEqual(
          at(500 + winner),
        );
      });
    });

    describe("workspaces and members", () => {
      test("workspaces: every field round-trips, with and without the optional dates", async () => {
        const user = aUser();
        await storage.users.insert(user);
        const plain = aWorkspace(user.id, { description: "" });
        const full = aWorkspace(user.id, {
          name: "Équipe Ω 🚀",
          enrollAutoApprove: true,
          enrollExpiresAt: at(1000, 999),
          inviteExpiresAt: new Date(-1), // before the epoch, to the millisecond
        });
        await storage.workspaces.insert(plain);
        await storage.workspaces.insert(full);
        expect(await storage.workspaces.findById(plain.id)).toEqual(plain);
        expect(await storage.workspaces.findById(full.id)).toEqual(full);
        expect(await storage.workspaces.findById(uid())).toBeNull();
      });

      test("workspaces: duplicate id throws UniqueViolationError", async () => {
        const { workspace, user } = await seedWorkspace();
        await expectUnique(
          storage.workspaces.insert(aWorkspace(user.id, { id: workspace.id })),
          "workspaces.id",
        );
        expect(await storage.workspaces.findById(workspace.id)).toEqual(workspace);
      });

      test("workspaces: update changes only the given fields; null clears; unknown id is null", async () => {
        const { workspace } = await seedWorkspace();
        const withDates = await storage.workspaces.update(
          workspace.id,
          { enrollExpiresAt: at(2000, 1), inviteExpiresAt: at(3000, 2), enrollAutoApprove: true },
          at(100, 5),
        );
        expect(withDates).toEqual({
          ...workspace,
          enrollExpiresAt: at(2000, 1),
          inviteExpiresAt: at(3000, 2),
          enrollAutoApprove: true,
          updatedAt: at(100, 5),
        });
        const renamed = await storage.workspaces.update(
          workspace.id,
          { name: "renamed", description: "", enrollExpiresAt: null },
          at(200, 6),
        );
        expect(renamed).toEqual({
          ...workspace,
          name: "renamed",
          description: "",
          enrollAutoApprove: true,
          enrollExpiresAt: null,
          inviteExpiresAt: at(3000, 2),
          updatedAt: at(200, 6),
        });
        expect(await storage.workspaces.findById(workspace.id)).toEqual(renamed);
        expect(await storage.workspaces.update(uid(), { name: "x" }, at(1))).toBeNull();
      });

      test("workspaces: listForUser returns the user's workspaces, oldest first", async () => {
        const user = aUser();
        const other = aUser();
        await storage.users.insert(user);
        await storage.users.insert(other);
        const newer = aWorkspace(user.id, { createdAt: at(500) });
        const older = aWorkspace(user.id, { createdAt: at(400) });
        const notMine = aWorkspace(other.id);
        for (const w of [newer, older, notMine]) await storage.workspaces.insert(w);
        await storage.members.insert(aMember(newer.id, user.id));
        await storage.members.insert(aMember(older.id, user.id));
        await storage.members.insert(aMember(notMine.id, other.id));
        expect(await storage.workspaces.listForUser(user.id)).toEqual([older, newer]);
        expect(await storage.workspaces.listForUser(uid())).toEqual([]);
      });

      test("workspaces: delete returns true once, then false", async () => {
        const { workspace } = await seedWorkspace();
        expect(await storage.workspaces.delete(workspace.id)).toBe(true);
        expect(await storage.workspaces.findById(workspace.id)).toBeNull();
        expect(await storage.workspaces.delete(workspace.id)).toBe(false);
      });

      test("workspaces: delete removes everything in the workspace and nothing else", async () => {
        const seed = async () => {
          const { user, workspace, member } = await seedWorkspace();
          const guest = aUser();
          await storage.users.insert(guest);
          await storage.members.insert(aMember(workspace.id, guest.id, { role: "viewer" }));
          const ca = anAuthority(workspace.id, { isDefault: true });
          await storage.certificateAuthorities.insert(ca);
          const account = aServiceAccount(workspace.id);
          await storage.serviceAccounts.insert(account);
          const daemon = aDaemon(workspace.id);
          await storage.daemons.insert(daemon);
          await storage.auditEvents.append(anAuditEvent(workspace.id));
          await storage.auditEvents.append(anAuditEvent(workspace.id));
          const session = aSession(user.id);
          await storage.authSessions.insert(session);
          return { user, guest, workspace, member, ca, account, daemon, session };
        };
        const doomed = await seed();
        const kept = await seed();
        const page = { limit: 100, offset: 0 };

        expect(await storage.workspaces.delete(doomed.workspace.id)).toBe(true);

        const { workspace: w, ca, account, daemon } = doomed;
        expect(await storage.members.find(w.id, doomed.user.id)).toBeNull();
        expect(await storage.members.find(w.id, doomed.guest.id)).toBeNull();
        expect(await storage.members.listByWorkspace(w.id)).toEqual([]);
        expect(await storage.certificateAuthorities.findById(w.id, ca.id)).toBeNull();
        expect(await storage.certificateAuthorities.list(w.id)).toEqual([]);
        expect(await storage.serviceAccounts.findById(w.id, account.id)).toBeNull();
        expect(await storage.serviceAccounts.findByIdForAuthentication(account.id)).toBeNull();
        expect((await storage.serviceAccounts.list(w.id, page)).total).toBe(0);
        expect(await storage.daemons.findById(w.id, daemon.id)).toBeNull();
        expect((await storage.daemons.list(w.id, page)).total).toBe(0);
        expect(await storage.auditEvents.list(w.id, page)).toEqual({ items: [], total: 0 });
        expect(await storage.workspaces.listForUser(doomed.user.id)).toEqual([]);
        // People and their sign-ins are not the workspace's to delete.
        expect(await storage.users.findById(doomed.user.id)).toEqual(doomed.user);
        expect(await storage.users.findById(doomed.guest.id)).toEqual(doomed.guest);
        expect(await storage.authSessions.findById(doomed.session.id)).toEqual(doomed.session);

        const k = kept;
        expect(await storage.workspaces.findById(k.workspace.id)).toEqual(k.workspace);
        expect(await storage.members.listByWorkspace(k.workspace.id)).toHaveLength(2);
        expect(await storage.certificateAuthorities.findById(k.workspace.id, k.ca.id)).toEqual(k.ca);
        expect(await storage.serviceAccounts.findById(k.workspace.id, k.account.id)).toEqual(k.account);
        expect(await storage.daemons.findById(k.workspace.id, k.daemon.id)).toEqual(k.daemon);
        expect((await storage.auditEvents.list(k.workspace.id, page)).total).toBe(2);
      });

      test("members: round-trip, find, list oldest first, not found, duplicate", async () => {
        const { workspace, member } = await seedWorkspace();
        const second = aUser();
        await storage.users.insert(second);
        const secondMember = aMember(workspace.id, second.id, { role: "viewer", createdAt: at(5000, 1) });
        await storage.members.insert(secondMember);
        expect(await storage.members.find(workspace.id, member.userId)).toEqual(member);
        expect(await storage.members.find(workspace.id, second.id)).toEqual(secondMember);
        expect(await storage.members.listByWorkspace(workspace.id)).toEqual([member, secondMember]);
        expect(await storage.members.find(workspace.id, uid())).toBeNull();
        expect(await storage.members.listByWorkspace(uid())).toEqual([]);
        await expectUnique(
          storage.members.insert(aMember(workspace.id, second.id, { role: "admin" })),
          "workspace_members.user_id",
        );
        expect(await storage.members.find(workspace.id, second.id)).toEqual(secondMember);
      });

      test("members: another workspace's id finds nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        expect(await storage.members.find(b.workspace.id, a.user.id)).toBeNull();
        expect(await storage.members.listByWorkspace(b.workspace.id)).toEqual([b.member]);
      });
    });

    describe("certificate authorities", () => {
      test("certificateAuthorities: every field round-trips (bytes, maps, arrays, big numbers)", async () => {
        const { workspace } = await seedWorkspace();
        const ssh = anAuthority(workspace.id, { isDefault: true, description: "" });
        const x509 = anAuthority(workspace.id, {
          authorityType: "x509",
          keyType: "rsa",
          keyBits: 4096,
          certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
          isActive: false,
          allowedKeyTypes: [],
          userExtensions: {},
          userCriticalOptions: { "force-command": "/bin/echo «hi» 👋", "": "empty key" },
          sealedPrivateKey: new Uint8Array(0),
          keyVersion: 7,
          createdAt: at(32),
        });
        const bigKey = anAuthority(workspace.id, {
          sealedPrivateKey: Uint8Array.from({ length: 4096 }, (_, i) => (i * 31) % 256),
          createdAt: at(33),
        });
        // A key in a PKCS#11 token: the row holds the key object's URI, for itself and its next key.
        const inToken = anAuthority(workspace.id, {
          keyStorage: "pkcs11",
          sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-1-v1;id=%0f%a3;type=private"),
          rotationPhase: "published",
          nextKey: {
            keyType: "ed25519",
            keyBits: 256,
            certificate: "",
            publicKey: "ssh-ed25519 AAAA",
            serialNumber: "",
            subject: "next",
            notBefore: at(34),
            notAfter: at(35),
            sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-1-v2;id=%10;type=private"),
          },
          createdAt: at(34),
        });
        for (const ca of [ssh, x509, bigKey, inToken]) await storage.certificateAuthorities.insert(ca);
        for (const ca of [ssh, x509, bigKey, inToken]) {
          const found = await storage.certificateAuthorities.findById(workspace.id, ca.id);
          expect(found).toEqual(ca);
          expect(found?.sealedPrivateKey).toBeInstanceOf(Uint8Array);
          expect(Array.from(found?.sealedPrivateKey ?? [])).toEqual(Array.from(ca.sealedPrivateKey));
        }
        expect(await storage.certificateAuthorities.list(workspace.id)).toEqual([ssh, x509, bigKey, inToken]);
      });

      test("certificateAuthorities: not found and another workspace's id find, change and delete nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const ca = anAuthority(a.workspace.id);
        await storage.certificateAuthorities.insert(ca);
        expect(await storage.certificateAuthorities.findById(a.workspace.id, uid())).toBeNull();
        expect(await storage.certificateAuthorities.findById(b.workspace.id, ca.id)).toBeNull();
        expect(await storage.certificateAuthorities.list(b.workspace.id)).toEqual([]);
        expect(
          await storage.certificateAuthorities.update(b.workspace.id, ca.id, { name: "hijacked" }, at(1)),
        ).toBeNull();
        await storage.certificateAuthorities.clearDefault(b.workspace.id, "ssh", at(1));
        expect(await storage.certificateAuthorities.delete(b.workspace.id, ca.id)).toBe(false);
        expect(await storage.certificateAuthorities.findById(a.workspace.id, ca.id)).toEqual(ca);
      });

      test("certificateAuthorities: update changes only the given fields", async () => {
        const { workspace } = await seedWorkspace();
        const ca = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(ca);
        const patch = {
          name: "renamed ✓",
          description: "",
          isActive: false,
          allowedKeyTypes: ["rsa" as const],
          lifetimeSeconds: 60,
          userDefaultTtlSeconds: 61,
          userMaxTtlSeconds: 62,
          hostDefaultTtlSeconds: 63,
          hostMaxTtlSeconds: 64,
          userExtensions: { "permit-X11-forwarding": "" },
          userCriticalOptions: {},
        };
        const updated = await storage.certificateAuthorities.update(workspace.id, ca.id, patch, at(99, 9));
        expect(updated).toEqual({ ...ca, ...patch, updatedAt: at(99, 9) });
        expect(await storage.certificateAuthorities.findById(workspace.id, ca.id)).toEqual(updated);
        const untouched = await storage.certificateAuthorities.update(workspace.id, ca.id, {}, at(100));
        expect(untouched).toEqual({ ...ca, ...patch, updatedAt: at(100) });
      });

      test("certificateAuthorities: duplicate name in a workspace throws and changes nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const ca = anAuthority(a.workspace.id);
        const other = anAuthority(a.workspace.id);
        await storage.certificateAuthorities.insert(ca);
        await storage.certificateAuthorities.insert(other);
        const clash = anAuthority(a.workspace.id, { name: ca.name });
        await expectUnique(storage.certificateAuthorities.insert(clash), "certificate_authorities.name");
        expect(await storage.certificateAuthorities.findById(a.workspace.id, clash.id)).toBeNull();
        await expectUnique(
          storage.certificateAuthorities.update(a.workspace.id, other.id, { name: ca.name }, at(1)),
          "certificate_authorities.name",
        );
        expect(await storage.certificateAuthorities.findById(a.workspace.id, other.id)).toEqual(other);
        // Names are unique per workspace only.
        const elsewhere = anAuthority(b.workspace.id, { name: ca.name });
        await storage.certificateAuthorities.insert(elsewhere);
        expect(await storage.certificateAuthorities.findById(b.workspace.id, elsewhere.id)).toEqual(
          elsewhere,
        );
      });

      test("certificateAuthorities: a second default without clearDefault fails with UniqueViolationError", async () => {
        const { workspace } = await seedWorkspace();
        const first = anAuthority(workspace.id, { isDefault: true });
        await storage.certificateAuthorities.insert(first);
        // One default per kind: an x509 default is fine next to an ssh one.
        const x509 = anAuthority(workspace.id, { authorityType: "x509", isDefault: true });
        await storage.certificateAuthorities.insert(x509);

        const second = anAuthority(workspace.id, { isDefault: true });
        await expectUnique(
          storage.certificateAuthorities.insert(second),
          "certificate_authorities.is_default",
        );
        expect(await storage.certificateAuthorities.findById(workspace.id, second.id)).toBeNull();

        const third = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(third);
        await expectUnique(
          storage.certificateAuthorities.update(workspace.id, third.id, { isDefault: true }, at(1)),
          "certificate_authorities.is_default",
        );
        expect(await storage.certificateAuthorities.findById(workspace.id, third.id)).toEqual(third);
        expect(await storage.certificateAuthorities.findById(workspace.id, first.id)).toEqual(first);
      });

      test("certificateAuthorities: clearDefault then set in one transaction moves the default", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const first = anAuthority(a.workspace.id, { isDefault: true });
        const x509 = anAuthority(a.workspace.id, { authorityType: "x509", isDefault: true });
        const next = anAuthority(a.workspace.id);
        const otherWorkspace = anAuthority(b.workspace.id, { isDefault: true });
        for (const ca of [first, x509, next, otherWorkspace]) await storage.certificateAuthorities.insert(ca);

        await storage.transaction(async (tx) => {
          await tx.certificateAuthorities.clearDefault(a.workspace.id, "ssh", at(700, 1));
          await tx.certificateAuthorities.update(a.workspace.id, next.id, { isDefault: true }, at(700, 2));
        });
        expect(await storage.certificateAuthorities.findById(a.workspace.id, first.id)).toEqual({
          ...first,
          isDefault: false,
          updatedAt: at(700, 1),
        });
        expect((await storage.certificateAuthorities.findById(a.workspace.id, next.id))?.isDefault).toBe(
          true,
        );
        // Only that workspace and kind.
        expect(await storage.certificateAuthorities.findById(a.workspace.id, x509.id)).toEqual(x509);
        expect(await storage.certificateAuthorities.findById(b.workspace.id, otherWorkspace.id)).toEqual(
          otherWorkspace,
        );
      });

      test("certificateAuthorities: delete returns true once, then false", async () => {
        const { workspace } = await seedWorkspace();
        const ca = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(ca);
        expect(await storage.certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
        expect(await storage.certificateAuthorities.findById(workspace.id, ca.id)).toBeNull();
        expect(await storage.certificateAuthorities.delete(workspace.id, ca.id)).toBe(false);
      });
    });

    describe("service accounts", () => {
      test("serviceAccounts: every field round-trips; findByIdForAuthentication ignores the workspace", async () => {
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id, {
          description: "",
          tags: [],
          expiresAt: null,
          lastUsedAt: at(41, 1),
        });
        const tagged = aServiceAccount(workspace.id, {
          tags: ["ünï", "a,b", 'quote"d', "%", ""],
          role: "viewer",
        });
        await storage.serviceAccounts.insert(account);
        await storage.serviceAccounts.insert(tagged);
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
        expect(await storage.serviceAccounts.findById(workspace.id, tagged.id)).toEqual(tagged);
        expect(await storage.serviceAccounts.findByIdForAuthentication(tagged.id)).toEqual(tagged);
        expect(await storage.serviceAccounts.findByIdForAuthentication(uid())).toBeNull();
        expect(await storage.serviceAccounts.findById(workspace.id, uid())).toBeNull();
      });

      test("serviceAccounts: another workspace's id finds, changes and deletes nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const account = aServiceAccount(a.workspace.id);
        await storage.serviceAccounts.insert(account);
        expect(await storage.serviceAccounts.findById(b.workspace.id, account.id)).toBeNull();
        expect(
          await storage.serviceAccounts.update(b.workspace.id, account.id, { role: "viewer" }, at(1)),
        ).toBeNull();
        expect(await storage.serviceAccounts.delete(b.workspace.id, account.id)).toBe(false);
        expect(await storage.serviceAccounts.list(b.workspace.id, { limit: 10, offset: 0 })).toEqual({
          items: [],
          total: 0,
        });
        expect(await storage.serviceAccounts.findById(a.workspace.id, account.id)).toEqual(account);
      });

      test("serviceAccounts: update, touchLastUsed and delete", async () => {
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id);
        await storage.serviceAccounts.insert(account);
        const patch = { name: "Renamed Bot", description: "now ÜPPER", role: "viewer" as const, tags: ["x"] };
        const updated = await storage.serviceAccounts.update(workspace.id, account.id, patch, at(42, 1));
        expect(updated).toEqual({ ...account, ...patch, updatedAt: at(42, 1) });
        await storage.serviceAccounts.touchLastUsed(account.id, at(43, 2));
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual({
          ...updated,
          lastUsedAt: at(43, 2),
        });
        // The folded copy used by the query filter follows renames.
        const page = await storage.serviceAccounts.list(workspace.id, {
          limit: 10,
          offset: 0,
          query: "üpper",
        });
        expect(page.items.map((a) => a.id)).toEqual([account.id]);
        expect(await storage.serviceAccounts.update(workspace.id, uid(), { name: "x" }, at(1))).toBeNull();
        expect(await storage.serviceAccounts.delete(workspace.id, account.id)).toBe(true);
        expect(await storage.serviceAccounts.delete(workspace.id, account.id)).toBe(false);
        expect(await storage.serviceAccounts.findByIdForAuthentication(account.id)).toBeNull();
      });

      test("serviceAccounts: duplicate name in a workspace throws and changes nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const account = aServiceAccount(a.workspace.id);
        const other = aServiceAccount(a.workspace.id);
        await storage.serviceAccounts.insert(account);
        await storage.serviceAccounts.insert(other);
        const clash = aServiceAccount(a.workspace.id, { name: account.name });
        await expectUnique(storage.serviceAccounts.insert(clash), "service_accounts.name");
        expect(await storage.serviceAccounts.findByIdForAuthentication(clash.id)).toBeNull();
        await expectUnique(
          storage.serviceAccounts.update(a.workspace.id, other.id, { name: account.name }, at(1)),
          "service_accounts.name",
        );
        expect(await storage.serviceAccounts.findById(a.workspace.id, other.id)).toEqual(other);
        await storage.serviceAccounts.insert(aServiceAccount(b.workspace.id, { name: account.name }));
      });

      test("serviceAccounts: list pages oldest first with the total", async () => {
        const { workspace } = await seedWorkspace();
        const accounts = Array.from({ length: 7 }, (_, i) =>
          aServiceAccount(workspace.id, { name: `bot ${i}`, createdAt: at(1000 + i) }),
        );
        for (const a of [...accounts].reverse()) await storage.serviceAccounts.insert(a);
        const first = await storage.serviceAccounts.list(workspace.id, { limit: 3, offset: 0 });
        expect(first).toEqual({ items: accounts.slice(0, 3), total: 7 });
        const last = await storage.serviceAccounts.list(workspace.id, { limit: 3, offset: 6 });
        expect(last).toEqual({ items: accounts.slice(6), total: 7 });
        const beyond = await storage.serviceAccounts.list(workspace.id, { limit: 3, offset: 10 });
        expect(beyond).toEqual({ items: [], total: 7 });
      });

      test("serviceAccounts: list filters by query, role and every tag", async () => {
        const { workspace } = await seedWorkspace();
        const mk = (i: number, o: Partial<ServiceAccountRecord>) =>
          aServiceAccount(workspace.id, { description: "", tags: [], createdAt: at(2000 + i), ...o });
        const deploy = mk(0, { name: "Deploy-Bot", tags: ["ci", "prod"] });
        const backup = mk(1, {
          name: "backup",
          description: "Nightly DEPLOY of snapshots",
          role: "viewer",
          tags: ["prod"],
        });
        const ecole = mk(2, { name: "ÉCOLE sync", tags: ["ci"] });
        const literal = mk(3, { name: "100%_done", tags: ["ci", "prod", "eu"] });
        for (const a of [deploy, backup, ecole, literal]) await storage.serviceAccounts.insert(a);
        const ids = async (
          filter: Omit<Parameters<Storage["serviceAccounts"]["list"]>[1], "limit" | "offset">,
        ) => {
          const page = await storage.serviceAccounts.list(workspace.id, { limit: 100, offset: 0, ...filter });
          expect(page.total).toBe(page.items.length);
          return page.items.map((a) => a.id);
        };
        expect(await ids({ query: "deploy" })).toEqual([deploy.id, backup.id]);
        expect(await ids({ query: "école" })).toEqual([ecole.id]);
        // LIKE wildcards in the query are plain characters.
        expect(await ids({ query: "%" })).toEqual([literal.id]);
        expect(await ids({ query: "0%_d" })).toEqual([literal.id]);
        expect(await ids({ query: "_" })).toEqual([literal.id]);
        expect(await ids({ query: "nothing like it" })).toEqual([]);
        expect(await ids({ role: "viewer" })).toEqual([backup.id]);
        expect(await ids({ tags: ["prod"] })).toEqual([deploy.id, backup.id, literal.id]);
        expect(await ids({ tags: ["ci", "prod"] })).toEqual([deploy.id, literal.id]);
        expect(await ids({ tags: ["ci", "missing"] })).toEqual([]);
        expect(await ids({ tags: ["pro"] })).toEqual([]);
        expect(await ids({ tags: [] })).toEqual([deploy.id, backup.id, ecole.id, literal.id]);
        expect(await ids({ query: "o", role: "editor", tags: ["ci"] })).toEqual([
          deploy.id,
          ecole.id,
          literal.id,
        ]);
        const paged = await storage.serviceAccounts.list(workspace.id, {
          limit: 1,
          offset: 1,
          tags: ["prod"],
        });
        expect(paged).toEqual({ items: [backup], total: 3 });
      });
    });

    describe("daemons", () => {
      test("daemons: every field round-trips; another workspace's id finds nothing", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const daemon = aDaemon(a.workspace.id, {
          targetId: uid(),
          status: "accepted",
          recordSessions: true,
          metadata: { "kernel ✓": "6.1 «lts»", empty: "" },
          onlineSince: at(51, 1),
        });
        const bare = aDaemon(a.workspace.id, { metadata: {} });
        await storage.daemons.insert(daemon);
        await storage.daemons.insert(bare);
        expect(await storage.daemons.findById(a.workspace.id, daemon.id)).toEqual(daemon);
        expect(await storage.daemons.findById(a.workspace.id, bare.id)).toEqual(bare);
        expect(await storage.daemons.findById(a.workspace.id, uid())).toBeNull();
        expect(await storage.daemons.findById(b.workspace.id, daemon.id)).toBeNull();
        expect(
          await storage.daemons.update(b.workspace.id, daemon.id, { status: "rejected" }, at(1)),
        ).toBeNull();
        expect(await storage.daemons.delete(b.workspace.id, daemon.id)).toBe(false);
        expect((await storage.daemons.list(b.workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
        expect(await storage.daemons.findById(a.workspace.id, daemon.id)).toEqual(daemon);
      });

      test("daemons: update changes only the given fields; delete", async () => {
        const { workspace } = await seedWorkspace();
        const daemon = aDaemon(workspace.id);
        await storage.daemons.insert(daemon);
        const patch = {
          status: "accepted" as const,
          recordSessions: true,
          metadata: { os: "freebsd" },
          name: "renamed-host",
          targetId: uid(),
          onlineSince: at(52, 2),
        };
        const updated = await storage.daemons.update(workspace.id, daemon.id, patch, at(53, 3));
        expect(updated).toEqual({ ...daemon, ...patch, updatedAt: at(53, 3) });
        const offline = await storage.daemons.update(
          workspace.id,
          daemon.id,
          { onlineSince: null, targetId: null },
          at(54),
        );
        expect(offline).toEqual({
          ...daemon,
          ...patch,
          onlineSince: null,
          targetId: null,
          updatedAt: at(54),
        });
        expect(await storage.daemons.update(workspace.id, uid(), { name: "x" }, at(1))).toBeNull();
        expect(await storage.daemons.delete(workspace.id, daemon.id)).toBe(true);
        expect(await storage.daemons.delete(workspace.id, daemon.id)).toBe(false);
      });

      test("daemons: list pages and filters by query, online and status", async () => {
        const { workspace } = await seedWorkspace();
        const mk = (i: number, o: Partial<DaemonRecord>) =>
          aDaemon(workspace.id, { createdAt: at(3000 + i), ...o });
        const web = mk(0, { name: "Web-01", status: "accepted", onlineSince: at(1) });
        const db = mk(1, { name: "db-01", status: "accepted" });
        const pending = mk(2, { name: "WEB-02", status: "pending" });
        const rejected = mk(3, { name: "laptop", status: "rejected", onlineSince: at(2) });
        for (const d of [rejected, pending, db, web]) await storage.daemons.insert(d);
        const ids = async (filter: Omit<Parameters<Storage["daemons"]["list"]>[1], "limit" | "offset">) => {
          const page = await storage.daemons.list(workspace.id, { limit: 100, offset: 0, ...filter });
          expect(page.total).toBe(page.items.length);
          return page.items.map((d) => d.id);
        };
        expect(await ids({})).toEqual([web.id, db.id, pending.id, rejected.id]);
        expect(await ids({ query: "web" })).toEqual([web.id, pending.id]);
        expect(await ids({ online: true })).toEqual([web.id, rejected.id]);
        expect(await ids({ online: false })).toEqual([db.id, pending.id]);
        expect(await ids({ status: "accepted" })).toEqual([web.id, db.id]);
        expect(await ids({ query: "01", status: "accepted", online: false })).toEqual([db.id]);
        expect(await storage.daemons.list(workspace.id, { limit: 2, offset: 1 })).toEqual({
          items: [db, pending],
          total: 4,
        });
      });
    });

    describe("audit events", () => {
      test("auditEvents: list is newest first, paged, with the total; other workspaces excluded", async () => {
        const a = await seedWorkspace();
        const b = await seedWorkspace();
        const events = [3, 1, 4, 0, 2].map((i) =>
          anAuditEvent(a.workspace.id, { timestamp: at(4000 + i, i), userAgent: i === 0 ? "" : "ü" }),
        );
        for (const e of events) await storage.auditEvents.append(e);
        await storage.auditEvents.append(anAuditEvent(b.workspace.id));
        await storage.auditEvents.append(anAuditEvent(null));
        const newestFirst = [...events].sort((x, y) => y.timestamp.getTime() - x.timestamp.getTime());
        expect(await storage.auditEvents.list(a.workspace.id, { limit: 100, offset: 0 })).toEqual({
          items: newestFirst,
          total: 5,
        });
        expect(await storage.auditEvents.list(a.workspace.id, { limit: 2, offset: 2 })).toEqual({
          items: newestFirst.slice(2, 4),
          total: 5,
        });
        expect((await storage.auditEvents.list(b.workspace.id, { limit: 100, offset: 0 })).total).toBe(1);
      });

      test("auditEvents: events of the same millisecond list the last appended first", async () => {
        const { workspace } = await seedWorkspace();
        // Random ids, so only the append order can explain the result.
        const events = ["workspace.create", "workspace.update", "member.add", "workspace.update"].map(
          (action) => anAuditEvent(workspace.id, { action, timestamp: at(4500, 5) }),
        );
        for (const e of events) await storage.auditEvents.append(e);
        const page = await storage.auditEvents.list(workspace.id, { limit: 100, offset: 0 });
        expect(page.items).toEqual([...events].reverse());
      });

      test("auditEvents: list filters by since (inclusive), until (exclusive), action and actor", async () => {
        const { workspace } = await seedWorkspace();
        const actor = uid();
        const e1 = anAuditEvent(workspace.id, {
          timestamp: at(5000),
          action: "workspace.update",
          actorId: actor,
        });
        const e2 = anAuditEvent(workspace.id, { timestamp: at(5001), action: "workspace.update" });
        const e3 = anAuditEvent(workspace.id, {
          timestamp: at(5002),
          action: "daemon.delete",
          actorId: actor,
        });
        for (const e of [e1, e2, e3]) await storage.auditEvents.append(e);
        const ids = async (
          filter: Omit<Parameters<Storage["auditEvents"]["list"]>[1], "limit" | "offset">,
        ) => {
          const page = await storage.auditEvents.list(workspace.id, { limit: 100, offset: 0, ...filter });
          expect(page.total).toBe(page.items.length);
          return page.items.map((e) => e.id);
        };
        expect(await ids({ since: at(5001) })).toEqual([e3.id, e2.id]);
        expect(await ids({ until: at(5001) })).toEqual([e1.id]);
        expect(await ids({ since: at(5000), until: at(5002) })).toEqual([e2.id, e1.id]);
        expect(await ids({ action: "workspace.update" })).toEqual([e2.id, e1.id]);
        expect(await ids({ actorId: actor })).toEqual([e3.id, e1.id]);
        expect(await ids({ actorId: actor, action: "daemon.delete", since: at(5002) })).toEqual([e3.id]);
      });

      test("auditEvents: duplicate id throws UniqueViolationError", async () => {
        const { workspace } = await seedWorkspace();
        const event = anAuditEvent(workspace.id);
        await storage.auditEvents.append(event);
        await expectUnique(storage.auditEvents.append({ ...event }), "audit_events.id");
      });
    });

    describe("secrets", () => {
      test("secrets: find is null until stored; insertIfAbsent keeps the first secret", async () => {
        const first = aSecret();
        expect(await storage.secrets.find(first.name)).toBeNull();
        const stored = await storage.secrets.insertIfAbsent(first);
        expect(stored).toEqual(first);
        expect(stored.sealed).toBeInstanceOf(Uint8Array);
        const second = { ...aSecret(), name: first.name };
        expect(await storage.secrets.insertIfAbsent(second)).toEqual(first);
        expect(await storage.secrets.find(first.name)).toEqual(first);
      });

      test("secrets: concurrent insertIfAbsent calls all return the same secret", async () => {
        const name = `signing-key-${uid()}`;
        const candidates = Array.from({ length: 20 }, (_, i) =>
          aSecret({ name, sealed: new Uint8Array([i, i, i]), createdAt: at(i) }),
        );
        const results = await Promise.all(candidates.map((c) => storage.secrets.insertIfAbsent(c)));
        const winner = results[0];
        expect(candidates).toContainEqual(winner);
        for (const r of results) expect(r).toEqual(winner);
        expect(await storage.secrets.find(name)).toEqual(winner);
      });
    });

    describe("sealedValues", () => {
      test("sealedValues: listAll leaves out authorities whose key is in a PKCS#11 token (nothing sealed to re-seal)", async () => {
        const { workspace } = await seedWorkspace();
        const software = anAuthority(workspace.id);
        const inToken = anAuthority(workspace.id, {
          keyStorage: "pkcs11",
          sealedPrivateKey: new TextEncoder().encode("pkcs11:object=wap-ca-2-v1;id=%01;type=private"),
        });
        for (const ca of [software, inToken]) await storage.certificateAuthorities.insert(ca);
        const caIds = (await storage.sealedValues.listAll()).flatMap((value) =>
          value.ref.kind === "ca_key" ? [value.ref.caId] : [],
        );
        expect(caIds).toContain(software.id);
        expect(caIds).not.toContain(inToken.id);
        expect((await storage.certificateAuthorities.findById(workspace.id, inToken.id))?.keyStorage).toBe(
          "pkcs11",
        );
      });

      test("sealedValues: listAll finds every CA key and secret; replace swaps one, matching the key version", async () => {
        const { workspace } = await seedWorkspace();
        const ca = anAuthority(workspace.id, { keyVersion: 3 });
        await storage.certificateAuthorities.insert(ca);
        const secret = aSecret();
        await storage.secrets.insertIfAbsent(secret);
        const all = await storage.sealedValues.listAll();
        const caRef = { kind: "ca_key", caId: ca.id, keyVersion: 3 } as const;
        expect(all).toContainEqual({ ref: caRef, sealed: ca.sealedPrivateKey });
        expect(all).toContainEqual({ ref: { kind: "secret", name: secret.name }, sealed: secret.sealed });

        const resealed = new Uint8Array([9, 8, 7]);
        expect(await storage.sealedValues.replace({ ...caRef, keyVersion: 2 }, resealed)).toBe(false);
        expect(await storage.sealedValues.replace({ ...caRef, caId: uid() }, resealed)).toBe(false);
        expect(
          (await storage.certificateAuthorities.findById(workspace.id, ca.id))?.sealedPrivateKey,
        ).toEqual(ca.sealedPrivateKey);
        expect(await storage.sealedValues.replace(caRef, resealed)).toBe(true);
        expect(
          (await storage.certificateAuthorities.findById(workspace.id, ca.id))?.sealedPrivateKey,
        ).toEqual(resealed);
        expect(await storage.sealedValues.replace({ kind: "secret", name: secret.name }, resealed)).toBe(
          true,
        );
        expect((await storage.secrets.find(secret.name))?.sealed).toEqual(resealed);
      });

      test("sealedValues: a replacement inside a rolled-back transaction leaves the old value", async () => {
        const secret = aSecret();
        await storage.secrets.insertIfAbsent(secret);
        await expect(
          storage.transaction(async (tx) => {
            await tx.sealedValues.replace({ kind: "secret", name: secret.name }, new Uint8Array([1]));
            throw new Error("abandon");
          }),
        ).rejects.toThrow("abandon");
        expect((await storage.secrets.find(secret.name))?.sealed).toEqual(secret.sealed);
      });
    });

    runAccountContract({
      storage: () => storage,
      test,
      seedWorkspace,
      aUser,
      aSession,
      aMember,
      expectUnique,
    });
    runCertificateContract({ storage: () => storage, test, seedWorkspace, anAuthority, expectUnique });
    runWorkspaceAccessContract({
      storage: () => storage,
      test,
      seedWorkspace,
      aUser,
      aMember,
      anAuthority,
      aServiceAccount,
      aDaemon,
      expectUnique,
    });
    runDaemonContract({ storage: () => storage, test, seedWorkspace, aDaemon, expectUnique });
    runRecordingContract({ storage: () => storage, test, seedWorkspace, expectUnique });
    runSsoBillingContract({
      storage: () => storage,
      test,
      seedWorkspace,
      aUser,
      aMember,
      anAuthority,
      aServiceAccount,
      anAuditEvent,
      expectUnique,
    });

    describe("transactions", () => {
      test("transaction: commits when the callback resolves and returns its value", async () => {
        const result = await storage.transaction(async (tx) => {
          const seeded = await seedWorkspace(tx);
          // Reads inside see the transaction's own writes.
          expect(await tx.workspaces.findById(seeded.workspace.id)).toEqual(seeded.workspace);
          return seeded;
        });
        expect(await storage.workspaces.findById(result.workspace.id)).toEqual(result.workspace);
        expect(await storage.members.find(result.workspace.id, result.user.id)).toEqual(result.member);
      });

      test("transaction: a throw rolls back every write and rethrows the same error", async () => {
        const { workspace } = await seedWorkspace();
        const user = aUser();
        const ca = anAuthority(workspace.id);
        const boom = new Error("boom");
        const error = await rejection(
          storage.transaction(async (tx) => {
            await tx.users.insert(user);
            await tx.certificateAuthorities.insert(ca);
            await tx.workspaces.update(workspace.id, { name: "changed" }, at(1));
            await tx.auditEvents.append(anAuditEvent(workspace.id));
            throw boom;
          }),
        );
        expect(error).toBe(boom);
        expect(await storage.users.findById(user.id)).toBeNull();
        expect(await storage.certificateAuthorities.findById(workspace.id, ca.id)).toBeNull();
        expect(await storage.workspaces.findById(workspace.id)).toEqual(workspace);
        expect((await storage.auditEvents.list(workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
      });

      test("transaction: a UniqueViolationError rolls back the transaction's earlier writes", async () => {
        const { workspace } = await seedWorkspace();
        const existing = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(existing);
        const account = aServiceAccount(workspace.id);
        await expectUnique(
          storage.transaction(async (tx) => {
            await tx.serviceAccounts.insert(account);
            await tx.certificateAuthorities.insert(anAuthority(workspace.id, { name: existing.name }));
          }),
          "certificate_authorities.name",
        );
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toBeNull();
      });

      test("transaction: a caught UniqueViolationError leaves the transaction usable", async () => {
        const { workspace } = await seedWorkspace();
        const existing = anAuthority(workspace.id);
        await storage.certificateAuthorities.insert(existing);
        const before = aServiceAccount(workspace.id);
        const after = aServiceAccount(workspace.id);
        const clash = anAuthority(workspace.id, { name: existing.name });
        await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(before);
          await expectUnique(tx.certificateAuthorities.insert(clash), "certificate_authorities.name");
          await tx.serviceAccounts.insert(after);
        });
        expect(await storage.serviceAccounts.findById(workspace.id, before.id)).toEqual(before);
        expect(await storage.serviceAccounts.findById(workspace.id, after.id)).toEqual(after);
        expect(await storage.certificateAuthorities.findById(workspace.id, clash.id)).toBeNull();
      });

      test("transaction: a nested transaction runs in the outer one", async () => {
        const { workspace } = await seedWorkspace();
        const outerAccount = aServiceAccount(workspace.id);
        const innerAccount = aServiceAccount(workspace.id);
        const boom = new Error("outer fails after the nested one succeeded");
        const error = await rejection(
          storage.transaction(async (tx) => {
            await tx.serviceAccounts.insert(outerAccount);
            await storage.transaction(async (inner) => {
              // The nested transaction sees the outer one's uncommitted write.
              expect(await inner.serviceAccounts.findById(workspace.id, outerAccount.id)).toEqual(
                outerAccount,
              );
              await inner.serviceAccounts.insert(innerAccount);
            });
            expect(await tx.serviceAccounts.findById(workspace.id, innerAccount.id)).toEqual(innerAccount);
            throw boom;
          }),
        );
        expect(error).toBe(boom);
        expect(await storage.serviceAccounts.findById(workspace.id, outerAccount.id)).toBeNull();
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();

        await storage.transaction(async () => {
          await storage.transaction(async (inner) => {
            await inner.serviceAccounts.insert(innerAccount);
          });
        });
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toEqual(innerAccount);
      });

      test("transaction: a nested transaction that throws rolls back only its own writes", async () => {
        const { workspace } = await seedWorkspace();
        const outerAccount = aServiceAccount(workspace.id);
        const innerAccount = aServiceAccount(workspace.id);
        const boom = new Error("inner");
        await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(outerAccount);
          const error = await rejection(
            storage.transaction(async (inner) => {
              await inner.serviceAccounts.insert(innerAccount);
              throw boom;
            }),
          );
          expect(error).toBe(boom);
          expect(await tx.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();
        });
        expect(await storage.serviceAccounts.findById(workspace.id, outerAccount.id)).toEqual(outerAccount);
        expect(await storage.serviceAccounts.findById(workspace.id, innerAccount.id)).toBeNull();
      });

      test("transaction: a call on the storage itself inside a transaction fails instead of running", async () => {
        // The suite runs under NODE_ENV=test, where adapters refuse the call (the caller meant
        // `tx`) rather than let it read as if it ran outside the transaction. It must fail
        // promptly, not wait for a connection the transaction holds.
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id);
        const refusals = await storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(account);
          const outcomes = await Promise.allSettled([
            storage.workspaces.findById(workspace.id),
            storage.auditEvents.append(anAuditEvent(workspace.id)),
            storage.transaction(() => storage.serviceAccounts.findById(workspace.id, account.id)),
          ]);
          // The transaction's own handle still works after the refusals.
          expect(await tx.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
          return outcomes;
        });
        for (const outcome of refusals) {
          expect(outcome.status).toBe("rejected");
          expect(String((outcome as PromiseRejectedResult).reason)).toMatch(/inside storage\.transaction\(\)/);
        }
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
        expect((await storage.auditEvents.list(workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
      });

      test("transaction: another caller's calls while a transaction runs are not refused", async () => {
        const { workspace } = await seedWorkspace();
        const account = aServiceAccount(workspace.id);
        let release = () => {};
        const held = new Promise<void>((resolve) => {
          release = resolve;
        });
        let entered = () => {};
        const inside = new Promise<void>((resolve) => {
          entered = resolve;
        });
        const running = storage.transaction(async (tx) => {
          await tx.serviceAccounts.insert(account);
          entered();
          await held;
        });
        await inside;
        // Another caller's work is not the transaction's: it is neither refused nor joined.
        const other = storage.workspaces.findById(workspace.id);
        release();
        expect(await other).toEqual(workspace);
        await running;
        expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
      });

      test("transaction: concurrent transactions each commit or roll back on their own", async () => {
        const { workspace } = await seedWorkspace();
        const accounts = Array.from({ length: 10 }, () => aServiceAccount(workspace.id));
        const outcomes = await Promise.allSettled(
          accounts.map((account, i) =>
            storage.transaction(async (tx) => {
              await tx.serviceAccounts.insert(account);
              await tx.auditEvents.append(anAuditEvent(workspace.id));
              if (i % 2 === 1) throw new Error(`rollback ${i}`);
            }),
          ),
        );
        expect(outcomes.map((o) => o.status)).toEqual(
          accounts.map((_, i) => (i % 2 ? "rejected" : "fulfilled")),
        );
        for (const [i, account] of accounts.entries()) {
          const found = await storage.serviceAccounts.findById(workspace.id, account.id);
          expect(found).toEqual(i % 2 ? null : account);
        }
        expect((await storage.auditEvents.list(workspace.id, { limit: 100, offset: 0 })).total).toBe(5);
      });
    });

    describe("text and misc", () => {
      test("strings: arbitrary Unicode names, descriptions, tags and maps survive storage unchanged", async () => {
        const { workspace, user } = await seedWorkspace();
        await fc.assert(
          fc.asyncProperty(
            unicodeText(64),
            unicodeText(200),
            fc.array(unicodeText(16), { maxLength: 5 }),
            fc.dictionary(
              unicodeText(16).filter((k) => k !== "__proto__"),
              unicodeText(32),
              { maxKeys: 5, noNullPrototype: true },
            ),
            async (name, description, tags, metadata) => {
              const w = aWorkspace(user.id, { name, description });
              await storage.workspaces.insert(w);
              expect(await storage.workspaces.findById(w.id)).toEqual(w);
              // Names are unique per workspace: a suffix keeps runs apart.
              const account = aServiceAccount(workspace.id, {
                name: `${name}\u{1F511}${uid()}`,
                description,
                tags,
              });
              await storage.serviceAccounts.insert(account);
              expect(await storage.serviceAccounts.findById(workspace.id, account.id)).toEqual(account);
              const daemon = aDaemon(workspace.id, { name, metadata });
              await storage.daemons.insert(daemon);
              expect(await storage.daemons.findById(workspace.id, daemon.id)).toEqual(daemon);
            },
          ),
          { numRuns: 40 },
        );
      });

      test("strings: a query finds its account whatever the case of either side", async () => {
        const { workspace } = await seedWorkspace();
        await fc.assert(
          fc.asyncProperty(
            unicodeText(12).filter((s) => s.length > 0),
            async (word) => {
              const account = aServiceAccount(workspace.id, { name: `${uid()} ${word} end` });
              await storage.serviceAccounts.insert(account);
              for (const query of [word, word.toUpperCase(), word.toLowerCase()]) {
                // Only cases where folding is stable are meaningful (e.g. not "İ").
                if (query.toLowerCase() !== word.toLowerCase()) continue;
                const page = await storage.serviceAccounts.list(workspace.id, {
                  limit: 100,
                  offset: 0,
                  query,
                });
                expect(page.items.map((a) => a.id)).toContain(account.id);
              }
              await storage.serviceAccounts.delete(workspace.id, account.id);
            },
          ),
          { numRuns: 30 },
        );
      });

      test("ping resolves and capabilities are declared", async () => {
        await expect(storage.ping()).resolves.toBeUndefined();
        expect(typeof storage.capabilities.multiInstance).toBe("boolean");
      });
    });

    const unknown = [...skipped.keys()].filter((name) => !registered.has(name));
    if (unknown.length > 0) {
      throw new Error(`runStorageContract(${options.name}): skip names unknown tests: ${unknown.join("; ")}`);
    }
  });
}

/**
 * The storage contract of targets, the issuance ledger, retired authority keys and key rollover
 * (`replaceKey`). Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { AuditEventRecord } from "../../storage/audit.js";
import type {
  CertificateAuthorityRecord,
  RetiredAuthorityKeyRecord,
} from "../../storage/certificate-authorities.js";
import type { IssuedCertificateRecord } from "../../storage/certificates.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { TargetRecord } from "../../storage/targets.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface CertificateContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (s?: Repositories) => Promise<{ user: UserRecord; workspace: WorkspaceRecord }>;
  readonly anAuthority: (
    workspaceId: string,
    overrides?: Partial<CertificateAuthorityRecord>,
  ) => CertificateAuthorityRecord;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2025, 2, 14, 15, 9, 26, 535);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const tag = () => randomUUID().slice(0, 8);

function aTarget(workspaceId: string, caId: string, overrides: Partial<TargetRecord> = {}): TargetRecord {
  return {
    id: uid(),
    workspaceId,
    caId,
    daemonId: null,
    name: `web-${tag()}`,
    description: "the front end",
    tags: ["prod", "eu-west"],
    endpoints: ["10.0.0.5:4022", "192.0.2.7:4022"],
    metadata: { os: "linux", hostname: "web-1" },
    createdAt: at(10, 1),
    updatedAt: at(10, 1),
    ...overrides,
  };
}

function anIssued(
  workspaceId: string,
  caId: string,
  overrides: Partial<IssuedCertificateRecord> = {},
): IssuedCertificateRecord {
  const id = uid();
  return {
    id,
    workspaceId,
    caId,
    caKeyVersion: 1,
    kind: "ssh_user",
    // Above 2^63: serials are uint64 and must not pass through a signed 64-bit column.
    serial: (18_000_000_000_000_000_000n + BigInt(Math.floor(Math.random() * 1e15))).toString(),
    keyFingerprint: "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
    principals: [uid()],
    validAfter: at(20, 2),
    validBefore: at(20 + 3600, 3),
    requesterType: "user",
    requesterId: uid(),
    targetId: null,
    keyId: `wap:${workspaceId}:user:${id}`,
    createdAt: at(20, 4),
    ...overrides,
  };
}

/** The audit event that goes with a ledger entry. */
function anIssuanceEvent(entry: IssuedCertificateRecord): AuditEventRecord {
  return {
    id: uid(),
    workspaceId: entry.workspaceId,
    actorId: entry.requesterId,
    actorType: entry.requesterType,
    action: "certificate.sign_ssh_user",
    resource: `issued_certificate:${entry.id}`,
    ipAddress: "192.0.2.1",
    userAgent: "wap-cli/1.0",
    statusCode: "ok",
    requestId: uid(),
    timestamp: entry.createdAt,
  };
}

function aRetiredKey(
  ca: CertificateAuthorityRecord,
  overrides: Partial<RetiredAuthorityKeyRecord> = {},
): RetiredAuthorityKeyRecord {
  return {
    workspaceId: ca.workspaceId,
    caId: ca.id,
    version: 1,
    keyType: "ecdsa",
    keyBits: 384,
    publicKey: "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQ=",
    certificate: "",
    serialNumber: "",
    notBefore: at(0, 5),
    notAfter: at(315_360_000, 6),
    createdAt: at(0, 5),
    retiredAt: at(500, 7),
    trustedUntil: at(500 + 86_400, 8),
    ...overrides,
  };
}

export function runCertificateContract(ctx: CertificateContractContext): void {
  const { test, seedWorkspace, anAuthority, expectUnique } = ctx;
  const storage = () => ctx.storage();

  /** A workspace with one SSH authority. */
  async function seedAuthority(overrides: Partial<CertificateAuthorityRecord> = {}) {
    const { workspace } = await seedWorkspace();
    const ca = anAuthority(workspace.id, overrides);
    await storage().certificateAuthorities.insert(ca);
    return { workspace, ca };
  }

  test("certificateAuthorities: findDefault finds the default of a kind in its workspace only", async () => {
    const { workspace } = await seedWorkspace();
    const b = await seedWorkspace();
    const s = storage().certificateAuthorities;
    expect(await s.findDefault(workspace.id, "ssh")).toBeNull();
    const plain = anAuthority(workspace.id);
    const ssh = anAuthority(workspace.id, { isDefault: true });
    const x509 = anAuthority(workspace.id, { authorityType: "x509", isDefault: true });
    for (const ca of [plain, ssh, x509]) await s.insert(ca);
    expect(await s.findDefault(workspace.id, "ssh")).toEqual(ssh);
    expect(await s.findDefault(workspace.id, "x509")).toEqual(x509);
    expect(await s.findDefault(b.workspace.id, "ssh")).toBeNull();
  });

  describe("targets", () => {
    test("targets: every field round-trips; null daemon, empty lists and maps too", async () => {
      const { workspace, ca } = await seedAuthority();
      const full = aTarget(workspace.id, ca.id, {
        daemonId: uid(),
        description: "ünïcødé ✓",
        metadata: { "": "empty key", note: '«quoted» "x"' },
      });
      const bare = aTarget(workspace.id, ca.id, { tags: [], endpoints: [], metadata: {}, description: "" });
      await storage().targets.insert(full);
      await storage().targets.insert(bare);
      expect(await storage().targets.findById(workspace.id, full.id)).toEqual(full);
      expect(await storage().targets.findById(workspace.id, bare.id)).toEqual(bare);
      expect(await storage().targets.findById(workspace.id, uid())).toBeNull();
    });

    test("targets: another workspace's id finds, changes, counts and deletes nothing", async () => {
      const a = await seedAuthority();
      const b = await seedAuthority();
      const target = aTarget(a.workspace.id, a.ca.id);
      await storage().targets.insert(target);
      const s = storage().targets;
      expect(await s.findById(b.workspace.id, target.id)).toBeNull();
      expect(await s.update(b.workspace.id, target.id, { name: "hijacked" }, at(1))).toBeNull();
      expect(await s.delete(b.workspace.id, target.id)).toBe(false);
      expect(await s.countByCa(b.workspace.id, a.ca.id)).toBe(0);
      expect(await s.list(b.workspace.id, { limit: 10, offset: 0 })).toEqual({ items: [], total: 0 });
      expect(await s.findById(a.workspace.id, target.id)).toEqual(target);
    });

    test("targets: names are unique per workspace", async () => {
      const a = await seedAuthority();
      const b = await seedAuthority();
      const target = aTarget(a.workspace.id, a.ca.id);
      const other = aTarget(a.workspace.id, a.ca.id);
      await storage().targets.insert(target);
      await storage().targets.insert(other);
      const clash = aTarget(a.workspace.id, a.ca.id, { name: target.name });
      await expectUnique(storage().targets.insert(clash), "targets.name");
      expect(await storage().targets.findById(a.workspace.id, clash.id)).toBeNull();
      await expectUnique(
        storage().targets.update(a.workspace.id, other.id, { name: target.name }, at(2)),
        "targets.name",
      );
      expect(await storage().targets.findById(a.workspace.id, other.id)).toEqual(other);
      await storage().targets.insert(aTarget(b.workspace.id, b.ca.id, { name: target.name }));
    });

    test("targets: update changes only the given fields; delete returns true once", async () => {
      const { workspace, ca } = await seedAuthority();
      const second = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(second);
      const target = aTarget(workspace.id, ca.id);
      await storage().targets.insert(target);
      const patch = {
        caId: second.id,
        daemonId: uid(),
        name: `renamed-${tag()}`,
        description: "",
        tags: [],
        endpoints: ["[2001:db8::1]:4022"],
        metadata: { arch: "arm64" },
      };
      const updated = await storage().targets.update(workspace.id, target.id, patch, at(30, 9));
      expect(updated).toEqual({ ...target, ...patch, updatedAt: at(30, 9) });
      const cleared = await storage().targets.update(workspace.id, target.id, { daemonId: null }, at(31));
      expect(cleared).toEqual({ ...target, ...patch, daemonId: null, updatedAt: at(31) });
      expect(await storage().targets.delete(workspace.id, target.id)).toBe(true);
      expect(await storage().targets.delete(workspace.id, target.id)).toBe(false);
      expect(await storage().targets.findById(workspace.id, target.id)).toBeNull();
    });

    test("targets: list pages oldest first with the total and filters by authority and daemon", async () => {
      const { workspace, ca } = await seedAuthority();
      const other = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(other);
      const daemonId = uid();
      const targets = Array.from({ length: 5 }, (_, i) =>
        aTarget(workspace.id, i % 2 ? other.id : ca.id, {
          createdAt: at(100 + i),
          daemonId: i === 3 ? daemonId : null,
        }),
      );
      for (const t of [...targets].reverse()) await storage().targets.insert(t);
      const list = (filter: { caId?: string; daemonId?: string; limit?: number; offset?: number }) =>
        storage().targets.list(workspace.id, { limit: 100, offset: 0, ...filter });
      expect(await list({ limit: 2 })).toEqual({ items: targets.slice(0, 2), total: 5 });
      expect(await list({ limit: 2, offset: 4 })).toEqual({ items: targets.slice(4), total: 5 });
      expect(await list({ caId: other.id })).toEqual({ items: [targets[1], targets[3]], total: 2 });
      expect(await list({ daemonId })).toEqual({ items: [targets[3]], total: 1 });
      expect(await storage().targets.countByCa(workspace.id, ca.id)).toBe(3);
      expect(await storage().targets.countByCa(workspace.id, other.id)).toBe(2);
      expect(await storage().targets.countByCa(workspace.id, uid())).toBe(0);
    });
  });

  describe("issuance ledger", () => {
    test("issuedCertificates: every field round-trips, found by serial within its workspace and authority", async () => {
      const a = await seedAuthority();
      const b = await seedAuthority();
      const user = anIssued(a.workspace.id, a.ca.id);
      const host = anIssued(a.workspace.id, a.ca.id, {
        kind: "ssh_host",
        caKeyVersion: 3,
        requesterType: "daemon",
        targetId: uid(),
        principals: [uid()],
        serial: "18446744073709551615",
      });
      const x509 = anIssued(a.workspace.id, a.ca.id, {
        kind: "x509",
        serial: "7f3a9c0000000000000000000000ab",
        principals: ["alice", "DNS:alice.example.com", "IP:2001:db8::1", "email:alice@example.com"],
        keyId: "CN=alice",
      });
      for (const c of [user, host, x509]) await storage().issuedCertificates.insert(c);
      for (const c of [user, host, x509]) {
        expect(await storage().issuedCertificates.findBySerial(a.workspace.id, a.ca.id, c.serial)).toEqual(c);
      }
      expect(
        await storage().issuedCertificates.findBySerial(b.workspace.id, a.ca.id, user.serial),
      ).toBeNull();
      expect(
        await storage().issuedCertificates.findBySerial(a.workspace.id, b.ca.id, user.serial),
      ).toBeNull();
      expect(await storage().issuedCertificates.findBySerial(a.workspace.id, a.ca.id, "1")).toBeNull();
      expect(await storage().issuedCertificates.list(b.workspace.id, { limit: 10, offset: 0 })).toEqual({
        items: [],
        total: 0,
      });
    });

    test("issuedCertificates: a serial is unique per authority, also under concurrency", async () => {
      const { workspace, ca } = await seedAuthority();
      const other = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(other);
      const first = anIssued(workspace.id, ca.id);
      await storage().issuedCertificates.insert(first);
      const clash = anIssued(workspace.id, ca.id, { serial: first.serial });
      await expectUnique(storage().issuedCertificates.insert(clash), "issued_certificates.serial");
      // The same serial under another authority is another certificate.
      await storage().issuedCertificates.insert(anIssued(workspace.id, other.id, { serial: first.serial }));

      const serial = "12345678901234567890";
      const racers = Array.from({ length: 12 }, () => anIssued(workspace.id, ca.id, { serial }));
      const outcomes = await Promise.allSettled(
        racers.map((c) => storage().transaction((tx) => tx.issuedCertificates.insert(c))),
      );
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const found = await storage().issuedCertificates.findBySerial(workspace.id, ca.id, serial);
      const winner = racers[outcomes.findIndex((o) => o.status === "fulfilled")];
      expect(found).toEqual(winner);
    });

    test("issuedCertificates: list is newest first with the total and filters", async () => {
      const { workspace, ca } = await seedAuthority();
      const other = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(other);
      const requesterId = uid();
      const entries = Array.from({ length: 6 }, (_, i) =>
        anIssued(workspace.id, i < 4 ? ca.id : other.id, {
          createdAt: at(200 + i),
          kind: i % 2 ? "ssh_host" : "ssh_user",
          requesterId: i === 2 ? requesterId : uid(),
        }),
      );
      for (const e of entries) await storage().issuedCertificates.insert(e);
      const newest = [...entries].reverse();
      const list = (filter: Record<string, unknown>) =>
        storage().issuedCertificates.list(workspace.id, { limit: 100, offset: 0, ...filter });
      // The ledger's total is a lower bound (a full count would scan it): rows to the page's end,
      // plus one when more follow; exact on the last page.
      expect(await list({ limit: 2 })).toEqual({ items: newest.slice(0, 2), total: 3 });
      expect(await list({ limit: 2, offset: 5 })).toEqual({ items: newest.slice(5), total: 6 });
      expect((await list({ caId: other.id })).items).toEqual(newest.slice(0, 2));
      expect((await list({ kind: "ssh_host" })).total).toBe(3);
      expect((await list({ requesterId })).items).toEqual([entries[2]]);
      expect((await list({ caId: ca.id, kind: "ssh_user" })).items).toEqual([entries[2], entries[0]]);
    });

    test("issuedCertificates: latestExpiry is per authority and key version", async () => {
      const { workspace, ca } = await seedAuthority();
      const other = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(other);
      const s = storage().issuedCertificates;
      expect(await s.latestExpiry(workspace.id, ca.id, 1)).toBeNull();
      await s.insert(anIssued(workspace.id, ca.id, { validBefore: at(1000, 1) }));
      await s.insert(anIssued(workspace.id, ca.id, { validBefore: at(5000, 2) }));
      await s.insert(anIssued(workspace.id, ca.id, { validBefore: at(9000, 3), caKeyVersion: 2 }));
      await s.insert(anIssued(workspace.id, other.id, { validBefore: at(99_000) }));
      expect(await s.latestExpiry(workspace.id, ca.id, 1)).toEqual(at(5000, 2));
      expect(await s.latestExpiry(workspace.id, ca.id, 2)).toEqual(at(9000, 3));
      expect(await s.latestExpiry(workspace.id, ca.id, 3)).toBeNull();
      const { workspace: elsewhere } = await seedWorkspace();
      expect(await s.latestExpiry(elsewhere.id, ca.id, 1)).toBeNull();
    });

    test("issuedCertificates: entries outlive their authority", async () => {
      const { workspace, ca } = await seedAuthority();
      const entry = anIssued(workspace.id, ca.id);
      await storage().issuedCertificates.insert(entry);
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, entry.serial)).toEqual(
        entry,
      );
    });
  });

  describe("append (group commit)", () => {
    /** The unit issuance appends: a ledger entry and its audit event. */
    const aUnit = (workspaceId: string, caId: string, overrides: Partial<IssuedCertificateRecord> = {}) => {
      const entry = anIssued(workspaceId, caId, overrides);
      return { entry, event: anIssuanceEvent(entry) };
    };
    const events = async (workspaceId: string) =>
      (await storage().auditEvents.list(workspaceId, { limit: 1000, offset: 0 })).items;

    test("append: a unit's ledger entry and audit event are both stored once it resolves", async () => {
      const { workspace, ca } = await seedAuthority();
      const { entry, event } = aUnit(workspace.id, ca.id);
      await storage().append({ issuedCertificates: [entry], auditEvents: [event] });
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, entry.serial)).toEqual(
        entry,
      );
      expect(await events(workspace.id)).toEqual([event]);
      // Either kind of row alone, and an empty unit, are units too.
      const alone = aUnit(workspace.id, ca.id);
      await storage().append({ issuedCertificates: [alone.entry] });
      await storage().append({ auditEvents: [alone.event] });
      await storage().append({});
      expect((await storage().issuedCertificates.list(workspace.id, { limit: 10, offset: 0 })).total).toBe(2);
      expect(await events(workspace.id)).toHaveLength(2);
    });

    test("append: a unit that breaks a uniqueness rule leaves no row behind and fails alone", async () => {
      const { workspace, ca } = await seedAuthority();
      const taken = anIssued(workspace.id, ca.id);
      await storage().issuedCertificates.insert(taken);
      const units = Array.from({ length: 9 }, (_, i) =>
        aUnit(workspace.id, ca.id, i === 4 ? { serial: taken.serial } : {}),
      );
      // Appended together, so that they may share a commit.
      const outcomes = await Promise.allSettled(
        units.map(({ entry, event }) =>
          storage().append({ issuedCertificates: [entry], auditEvents: [event] }),
        ),
      );
      expect(outcomes.map((o) => o.status)).toEqual(
        units.map((_, i) => (i === 4 ? "rejected" : "fulfilled")),
      );
      await expectUnique(
        Promise.reject((outcomes[4] as PromiseRejectedResult).reason),
        "issued_certificates.serial",
      );
      const stored = await events(workspace.id);
      expect(stored.map((e) => e.id).sort()).toEqual(
        units
          .filter((_, i) => i !== 4)
          .map(({ event }) => event.id)
          .sort(),
      );
      for (const [i, { entry }] of units.entries()) {
        const found = await storage().issuedCertificates.findBySerial(workspace.id, ca.id, entry.serial);
        expect(found).toEqual(i === 4 ? taken : entry);
      }
    });

    test("append: inside a transaction it is refused, and the transaction is unaffected", async () => {
      const { workspace, ca } = await seedAuthority();
      const { entry, event } = aUnit(workspace.id, ca.id);
      const kept = aUnit(workspace.id, ca.id);
      await storage().transaction(async (tx) => {
        await tx.issuedCertificates.insert(kept.entry);
        await expect(storage().append({ issuedCertificates: [entry], auditEvents: [event] })).rejects.toThrow(
          /outside storage\.transaction/,
        );
      });
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, kept.entry.serial)).toEqual(
        kept.entry,
      );
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, entry.serial)).toBeNull();
      expect(await events(workspace.id)).toEqual([]);
    });

    test("append: of racing units with one serial, exactly one is stored, with its audit event", async () => {
      const { workspace, ca } = await seedAuthority();
      const serial = "12345678901234567891";
      const racers = Array.from({ length: 12 }, () => aUnit(workspace.id, ca.id, { serial }));
      const outcomes = await Promise.allSettled(
        racers.map(({ entry, event }) =>
          storage().append({ issuedCertificates: [entry], auditEvents: [event] }),
        ),
      );
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const winner = racers[outcomes.findIndex((o) => o.status === "fulfilled")]!;
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, serial)).toEqual(
        winner.entry,
      );
      expect(await events(workspace.id)).toEqual([winner.event]);
    });
  });

  describe("key rollover", () => {
    test("certificateAuthorities: replaceKey sets the key and the next version, only from the expected one", async () => {
      const { workspace, ca } = await seedAuthority({ keyVersion: 4 });
      const key = {
        keyType: "rsa" as const,
        keyBits: 3072,
        certificate: "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n",
        publicKey: "ssh-rsa AAAAB3NzaC1yc2E=",
        serialNumber: "00ff",
        subject: "CN=renewed",
        notBefore: at(600, 1),
        notAfter: at(600 + 315_360_000, 2),
        sealedPrivateKey: new Uint8Array([7, 0, 255, 128]),
      };
      const s = storage().certificateAuthorities;
      expect(await s.replaceKey(workspace.id, ca.id, 3, key, at(601))).toBeNull();
      expect(await s.findById(workspace.id, ca.id)).toEqual(ca);
      const { workspace: elsewhere } = await seedWorkspace();
      expect(await s.replaceKey(elsewhere.id, ca.id, 4, key, at(601))).toBeNull();
      expect(await s.replaceKey(workspace.id, uid(), 4, key, at(601))).toBeNull();

      const replaced = await s.replaceKey(workspace.id, ca.id, 4, key, at(602, 5));
      expect(replaced).toEqual({ ...ca, ...key, keyVersion: 5, updatedAt: at(602, 5) });
      expect(await s.findById(workspace.id, ca.id)).toEqual(replaced);
    });

    test("certificateAuthorities: of concurrent replaceKey calls from one version, exactly one wins", async () => {
      const { workspace, ca } = await seedAuthority();
      const attempts = Array.from({ length: 8 }, (_, i) =>
        storage().transaction((tx) =>
          tx.certificateAuthorities.replaceKey(
            workspace.id,
            ca.id,
            1,
            { ...ca, publicKey: `ssh-ed25519 attempt-${i}` },
            at(700 + i),
          ),
        ),
      );
      const results = await Promise.all(attempts);
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect((await storage().certificateAuthorities.findById(workspace.id, ca.id))?.publicKey).toBe(
        winners[0]?.publicKey,
      );
    });

    test("retiredAuthorityKeys: round-trip newest version first, one row per version, scoped and cascaded", async () => {
      const { workspace, ca } = await seedAuthority();
      const b = await seedAuthority();
      const v1 = aRetiredKey(ca);
      const v2 = aRetiredKey(ca, {
        version: 2,
        keyType: "rsa",
        keyBits: 4096,
        certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        serialNumber: "0a",
        retiredAt: at(900),
        trustedUntil: at(900 + 31_536_000, 9),
      });
      await storage().retiredAuthorityKeys.insert(v1);
      await storage().retiredAuthorityKeys.insert(v2);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, ca.id)).toEqual([v2, v1]);
      await expectUnique(
        storage().retiredAuthorityKeys.insert(aRetiredKey(ca)),
        "certificate_authority_keys.version",
      );
      expect(await storage().retiredAuthorityKeys.list(b.workspace.id, ca.id)).toEqual([]);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, b.ca.id)).toEqual([]);
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
      expect(await storage().retiredAuthorityKeys.list(workspace.id, ca.id)).toEqual([]);
    });
  });

  test("workspaces: delete removes targets, ledger entries and retired keys with the workspace", async () => {
    const seed = async () => {
      const { workspace, ca } = await seedAuthority();
      const target = aTarget(workspace.id, ca.id);
      await storage().targets.insert(target);
      const entry = anIssued(workspace.id, ca.id, { targetId: target.id });
      await storage().issuedCertificates.insert(entry);
      await storage().retiredAuthorityKeys.insert(aRetiredKey(ca));
      return { workspace, ca, target, entry };
    };
    const doomed = await seed();
    const kept = await seed();
    expect(await storage().workspaces.delete(doomed.workspace.id)).toBe(true);
    for (const [seed, present] of [
      [doomed, false],
      [kept, true],
    ] as const) {
      const w = seed.workspace.id;
      expect(await storage().targets.findById(w, seed.target.id)).toEqual(present ? seed.target : null);
      expect(await storage().issuedCertificates.findBySerial(w, seed.ca.id, seed.entry.serial)).toEqual(
        present ? seed.entry : null,
      );
      expect((await storage().retiredAuthorityKeys.list(w, seed.ca.id)).length).toBe(present ? 1 : 0);
      expect((await storage().certificateAuthorities.findById(w, seed.ca.id)) !== null).toBe(present);
    }
  });
}

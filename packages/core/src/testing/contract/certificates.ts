/**
 * The storage contract of the issuance ledger: round-trips, serials unique per authority, listing,
 * and appends that commit a ledger entry with its audit event. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { IssuedCertificateRecord } from "../../storage/certificates.js";
import {
  anAuthority,
  anIssuanceEvent,
  anIssued,
  type ContractContext,
  certificateAt,
  expectUnique,
  seedAuthority,
  uid,
} from "./fixtures.js";

export function runIssuedCertificateContract(ctx: ContractContext): void {
  issuanceLedger(ctx);
  appendGroupCommit(ctx);
}

function issuanceLedger(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = certificateAt;

  const storage = () => ctx.storage();

  describe("issuance ledger", () => {
    test("issuedCertificates: every field round-trips, found by serial within its workspace and authority", async () => {
      const a = await seedAuthority(ctx);
      const b = await seedAuthority(ctx);
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
      const limited = anIssued(a.workspace.id, a.ca.id, {
        serial: "42",
        singleUse: true,
        limits: {
          sourceAddresses: ["127.0.0.1", "10.0.0.0/8"],
          permitPortForwarding: false,
          permitAgentForwarding: false,
          permitX11Forwarding: false,
          permitPty: true,
          verifyRequired: false,
          skKeysOnly: false,
          commands: ["uptime"],
        },
      });
      for (const c of [user, host, x509, limited]) await storage().issuedCertificates.insert(c);
      for (const c of [user, host, x509, limited]) {
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
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
      const entry = anIssued(workspace.id, ca.id);
      await storage().issuedCertificates.insert(entry);
      expect(await storage().certificateAuthorities.delete(workspace.id, ca.id)).toBe(true);
      expect(await storage().issuedCertificates.findBySerial(workspace.id, ca.id, entry.serial)).toEqual(
        entry,
      );
    });
  });
}

function appendGroupCommit(ctx: ContractContext): void {
  const { test } = ctx;

  const storage = () => ctx.storage();

  describe("append (group commit)", () => {
    /** The unit issuance appends: a ledger entry and its audit event. */
    const aUnit = (workspaceId: string, caId: string, overrides: Partial<IssuedCertificateRecord> = {}) => {
      const entry = anIssued(workspaceId, caId, overrides);
      return { entry, event: anIssuanceEvent(entry) };
    };

    const events = async (workspaceId: string) =>
      (await storage().auditEvents.list(workspaceId, { limit: 1000, offset: 0 })).items;

    test("append: a unit's ledger entry and audit event are both stored once it resolves", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
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
      const { workspace, ca } = await seedAuthority(ctx);
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
}

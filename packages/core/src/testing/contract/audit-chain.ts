/**
 * The storage contract of the audit hash chain: every way an event is appended (on its own, in a
 * transaction, in a savepoint, with `append`, many at once) links it to the one before, and no
 * rolled-back event leaves a gap. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import { findChainBreak, genesisHash } from "../../audit/chain.js";
import type { AuditEventRecord, ChainedAuditEventRecord } from "../../storage/audit.js";
import { anAuditEvent, at, type ContractContext } from "./fixtures.js";

export function runAuditChainContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  async function chainOf(workspaceId: string): Promise<ChainedAuditEventRecord[]> {
    return storage().auditEvents.scanChain(workspaceId, {
      from: 1,
      to: Number.MAX_SAFE_INTEGER,
      limit: 10_000,
    });
  }

  async function expectWholeChain(workspaceId: string, ids: readonly string[]) {
    const chain = await chainOf(workspaceId);
    expect(chain.map((e) => e.position)).toEqual(ids.map((_, i) => i + 1));
    expect(new Set(chain.map((e) => e.id))).toEqual(new Set(ids));
    expect(findChainBreak({ position: 0, hash: genesisHash }, chain)).toBeNull();
    const head = await storage().auditEvents.chainHead(workspaceId);
    expect(head).toEqual(
      chain.length === 0 ? null : { position: chain.length, hash: chain[chain.length - 1]!.hash },
    );
    return chain;
  }

  describe("audit chain", () => {
    test("auditChain: events appended every way are linked in commit order, from the genesis hash", async () => {
      const { workspace } = await seedWorkspace();
      const other = await seedWorkspace();
      const ws = workspace.id;
      const ids: string[] = [];
      const add = (overrides: Partial<AuditEventRecord> = {}) => {
        const event = anAuditEvent(ws, { timestamp: at(7000 + ids.length), ...overrides });
        ids.push(event.id);
        return event;
      };
      await storage().auditEvents.append(add());
      await storage().transaction(async (tx) => {
        await tx.auditEvents.append(add({ userAgent: 'ü "quoted"\n' }));
        await tx.auditEvents.append(anAuditEvent(other.workspace.id));
        await tx.auditEvents.append(add());
      });
      await storage().append({ auditEvents: [add()] });
      await storage().auditEvents.append(anAuditEvent(null));
      const chain = await expectWholeChain(ws, ids);
      expect(chain.map((e) => e.id)).toEqual(ids);
      expect(chain[0]!.previousHash).toEqual(genesisHash);
      expect(chain[1]!.userAgent).toBe('ü "quoted"\n');
      await expectWholeChain(
        other.workspace.id,
        (await chainOf(other.workspace.id)).map((e) => e.id),
      );
    });

    test("auditChain: a rolled-back transaction or savepoint leaves no gap", async () => {
      const { workspace } = await seedWorkspace();
      const ws = workspace.id;
      const kept: string[] = [];
      const failure = new Error("roll back");
      await expect(
        storage().transaction(async (tx) => {
          await tx.auditEvents.append(anAuditEvent(ws));
          throw failure;
        }),
      ).rejects.toBe(failure);
      await storage().transaction(async (tx) => {
        const first = anAuditEvent(ws);
        kept.push(first.id);
        await tx.auditEvents.append(first);
        await expect(
          storage().transaction(async (inner) => {
            await inner.auditEvents.append(anAuditEvent(ws));
            throw failure;
          }),
        ).rejects.toBe(failure);
        await storage().transaction(async (inner) => {
          const second = anAuditEvent(ws);
          kept.push(second.id);
          await inner.auditEvents.append(second);
        });
      });
      const duplicate = anAuditEvent(ws, { id: kept[0]! });
      await expect(storage().append({ auditEvents: [duplicate] })).rejects.toThrow();
      const last = anAuditEvent(ws);
      kept.push(last.id);
      await storage().auditEvents.append(last);
      expect((await expectWholeChain(ws, kept)).map((e) => e.id)).toEqual(kept);
    });

    test("auditChain: concurrent writers of one workspace form one chain, none lost", async () => {
      const { workspace } = await seedWorkspace();
      const ws = workspace.id;
      const events = Array.from({ length: 60 }, (_, i) => anAuditEvent(ws, { timestamp: at(8000 + i) }));
      await Promise.all(
        events.map((event, i) =>
          i % 3 === 0
            ? storage().append({ auditEvents: [event] })
            : i % 3 === 1
              ? storage().transaction((tx) => tx.auditEvents.append(event))
              : storage().auditEvents.append(event),
        ),
      );
      await expectWholeChain(
        ws,
        events.map((e) => e.id),
      );
    });

    test("auditChain: chainRange spans a time window; chainHashAt reads any position", async () => {
      const { workspace } = await seedWorkspace();
      const ws = workspace.id;
      expect(await storage().auditEvents.chainRange(ws, {})).toBeNull();
      // Committed out of time order: the range runs from the first in the window to the last.
      for (const s of [10, 12, 11, 14, 13])
        await storage().auditEvents.append(anAuditEvent(ws, { timestamp: at(s) }));
      expect(await storage().auditEvents.chainRange(ws, {})).toEqual({ first: 1, last: 5 });
      expect(await storage().auditEvents.chainRange(ws, { since: at(11), until: at(13) })).toEqual({
        first: 2,
        last: 3,
      });
      expect(await storage().auditEvents.chainRange(ws, { since: at(12), until: at(14) })).toEqual({
        first: 2,
        last: 5,
      });
      expect(await storage().auditEvents.chainRange(ws, { since: at(20) })).toBeNull();
      const chain = await chainOf(ws);
      expect(await storage().auditEvents.chainHashAt(ws, 0)).toEqual(genesisHash);
      expect(await storage().auditEvents.chainHashAt(ws, 3)).toEqual(chain[2]!.hash);
      expect(await storage().auditEvents.chainHashAt(ws, 6)).toBeNull();
      expect(
        (await storage().auditEvents.scanChain(ws, { from: 2, to: 4, limit: 2 })).map((e) => e.position),
      ).toEqual([2, 3]);
    });

    test("auditChain: signing keys are stored once; checkpoints list by position", async () => {
      const { workspace } = await seedWorkspace();
      const ws = workspace.id;
      expect(await storage().auditCheckpoints.findKey(ws)).toBeNull();
      const key = {
        workspaceId: ws,
        publicKey: new Uint8Array(32).fill(1),
        sealedPrivateKey: new Uint8Array([1, 2, 3]),
        createdAt: at(1),
      };
      expect(await storage().auditCheckpoints.insertKeyIfAbsent(key)).toEqual(key);
      expect(
        await storage().auditCheckpoints.insertKeyIfAbsent({ ...key, publicKey: new Uint8Array(32).fill(2) }),
      ).toEqual(key);
      expect(await storage().auditCheckpoints.latest(ws)).toBeNull();
      const checkpoint = (position: number, second: number) => ({
        workspaceId: ws,
        position,
        hash: new Uint8Array(32).fill(position),
        signedAt: at(second),
        signature: new Uint8Array(64).fill(second),
      });
      for (const c of [checkpoint(5, 2), checkpoint(2, 1), checkpoint(9, 3)])
        await storage().auditCheckpoints.add(c);
      expect(await storage().auditCheckpoints.latest(ws)).toEqual(checkpoint(9, 3));
      expect(await storage().auditCheckpoints.list(ws, { first: 2, last: 5 }, 10)).toEqual([
        checkpoint(2, 1),
        checkpoint(5, 2),
      ]);
    });
  });
}

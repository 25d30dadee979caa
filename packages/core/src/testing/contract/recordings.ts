/**
 * The storage contract of the session-recording repository (`@wap/core/storage`
 * recordings.ts): records that round-trip, chunks appended without gaps and read back in
 * keyset pages, lists with totals, completion with one winner, and tenant isolation.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { RecordingRecord } from "../../storage/recordings.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface RecordingContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (s?: Repositories) => Promise<{ user: UserRecord; workspace: WorkspaceRecord }>;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2026, 7, 15, 9, 30, 0, 123);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const concurrency = 20;

function aRecording(workspaceId: string, overrides: Partial<RecordingRecord> = {}): RecordingRecord {
  return {
    id: uid(),
    workspaceId,
    daemonId: uid(),
    targetId: uid(),
    username: "deploy$",
    userId: uid(),
    format: "asciicast-v2",
    sizeBytes: 0,
    chunkCount: 0,
    complete: false,
    truncated: false,
    startedAt: at(1, 5),
    endedAt: null,
    ...overrides,
  };
}

/** Bytes 0..255 repeated, offset by `seed`, so every chunk differs and holds every byte value. */
function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i + seed) % 256;
  return out;
}

export function runRecordingContract(ctx: RecordingContractContext): void {
  const { test, seedWorkspace, expectUnique } = ctx;

  describe("recordings", () => {
    test("recordings: every field round-trips; null target and ended; unknown is null", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const full = aRecording(workspace.id, { complete: true, truncated: true, endedAt: at(99, 7) });
      const bare = aRecording(workspace.id, { targetId: null });
      await storage.recordings.insert(full);
      await storage.recordings.insert(bare);
      expect(await storage.recordings.findById(workspace.id, full.id)).toEqual(full);
      expect(await storage.recordings.findById(workspace.id, bare.id)).toEqual(bare);
      expect(await storage.recordings.findById(workspace.id, uid())).toBeNull();
    });

    test("recordings: an id is recorded once, across workspaces", async () => {
      const storage = ctx.storage();
      const { workspace: a } = await seedWorkspace();
      const { workspace: b } = await seedWorkspace();
      const recording = aRecording(a.id);
      await storage.recordings.insert(recording);
      await expectUnique(storage.recordings.insert(aRecording(b.id, { id: recording.id })), "recordings.id");
      expect(await storage.recordings.findById(b.id, recording.id)).toBeNull();
    });

    test("recordings: chunks append in order, add up, and read back in keyset pages", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      const sizes = [65_536, 1, 300, 65_536, 7];
      for (const [seq, size] of sizes.entries()) {
        const appended = await storage.transaction((tx) =>
          tx.recordings.appendChunk(workspace.id, recording.id, { seq, data: bytes(size, seq) }),
        );
        expect(appended).toBe(true);
      }
      const stored = await storage.recordings.findById(workspace.id, recording.id);
      expect(stored).toMatchObject({ sizeBytes: 65_536 * 2 + 308, chunkCount: 5, truncated: false });
      const first = await storage.recordings.scanChunks(workspace.id, recording.id, { limit: 2 });
      expect(first.map((c) => c.seq)).toEqual([0, 1]);
      const second = await storage.recordings.scanChunks(workspace.id, recording.id, {
        afterSeq: 1,
        limit: 2,
      });
      const last = await storage.recordings.scanChunks(workspace.id, recording.id, { afterSeq: 3, limit: 2 });
      expect([...second, ...last].map((c) => c.seq)).toEqual([2, 3, 4]);
      for (const chunk of [...first, ...second, ...last]) {
        expect(chunk.data).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(chunk.data).equals(Buffer.from(bytes(sizes[chunk.seq]!, chunk.seq)))).toBe(true);
      }
      expect(
        await storage.recordings.scanChunks(workspace.id, recording.id, { afterSeq: 4, limit: 2 }),
      ).toEqual([]);
    });

    test("recordings: appendChunk refuses a gap, a repeat, a completed or another workspace's recording", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const { workspace: other } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      const append = (workspaceId: string, seq: number) =>
        storage.transaction((tx) =>
          tx.recordings.appendChunk(workspaceId, recording.id, { seq, data: bytes(10, seq) }),
        );
      expect(await append(workspace.id, 1)).toBe(false);
      expect(await append(other.id, 0)).toBe(false);
      expect(await append(workspace.id, 0)).toBe(true);
      expect(await append(workspace.id, 0)).toBe(false);
      expect(await storage.recordings.complete(workspace.id, recording.id, at(50))).not.toBeNull();
      expect(await append(workspace.id, 1)).toBe(false);
      expect(await storage.recordings.findById(workspace.id, recording.id)).toMatchObject({
        sizeBytes: 10,
        chunkCount: 1,
        complete: true,
        endedAt: at(50),
      });
      expect(await storage.recordings.scanChunks(other.id, recording.id, { limit: 10 })).toEqual([]);
    });

    test("recordings: racing appends of the same chunk number store exactly one", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      const results = await Promise.allSettled(
        Array.from({ length: concurrency }, (_, i) =>
          storage.transaction((tx) =>
            tx.recordings.appendChunk(workspace.id, recording.id, { seq: 0, data: bytes(100 + i, i) }),
          ),
        ),
      );
      // A loser either sees the count moved (false) or loses on the key; never two rows.
      expect(results.filter((r) => r.status === "fulfilled" && r.value === true)).toHaveLength(1);
      const stored = await storage.recordings.findById(workspace.id, recording.id);
      expect(stored?.chunkCount).toBe(1);
      const chunks = await storage.recordings.scanChunks(workspace.id, recording.id, { limit: 10 });
      expect(chunks).toHaveLength(1);
      expect(stored?.sizeBytes).toBe(chunks[0]?.data.byteLength);
    });

    test("recordings: the truncated flag is set with the chunk that says so", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      await storage.recordings.appendChunk(workspace.id, recording.id, { seq: 0, data: bytes(5, 0) });
      expect((await storage.recordings.findById(workspace.id, recording.id))?.truncated).toBe(false);
      await storage.recordings.appendChunk(
        workspace.id,
        recording.id,
        { seq: 1, data: bytes(5, 1) },
        { truncated: true },
      );
      expect((await storage.recordings.findById(workspace.id, recording.id))?.truncated).toBe(true);
    });

    test("recordings: complete has one winner and leaves other workspaces alone", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const { workspace: other } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      expect(await storage.recordings.complete(other.id, recording.id, at(9))).toBeNull();
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage.recordings.complete(workspace.id, recording.id, at(9)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toEqual({ ...recording, complete: true, endedAt: at(9) });
      expect(await storage.recordings.complete(workspace.id, uid(), at(9))).toBeNull();
    });

    test("recordings: list is newest first, paged, filtered, with total and totalBytes of every match", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const { workspace: other } = await seedWorkspace();
      const daemonA = uid();
      const daemonB = uid();
      const alice = uid();
      const rows = [
        aRecording(workspace.id, { daemonId: daemonA, userId: alice, username: "root", startedAt: at(10) }),
        aRecording(workspace.id, { daemonId: daemonA, username: "deploy", startedAt: at(30) }),
        aRecording(workspace.id, { daemonId: daemonB, userId: alice, username: "deploy", startedAt: at(20) }),
      ];
      for (const row of rows) await storage.recordings.insert(row);
      await storage.recordings.insert(aRecording(other.id, { daemonId: daemonA, userId: alice }));
      for (const [i, row] of rows.entries()) {
        await storage.recordings.appendChunk(workspace.id, row.id, {
          seq: 0,
          data: bytes(1000 * (i + 1), i),
        });
      }
      const all = await storage.recordings.list(workspace.id, { limit: 10, offset: 0 });
      expect(all.items.map((r) => r.id)).toEqual([rows[1]!.id, rows[2]!.id, rows[0]!.id]);
      expect(all).toMatchObject({ total: 3, totalBytes: 6000 });
      const page = await storage.recordings.list(workspace.id, { limit: 1, offset: 1 });
      expect(page.items.map((r) => r.id)).toEqual([rows[2]!.id]);
      expect(page).toMatchObject({ total: 3, totalBytes: 6000 });
      const byDaemon = await storage.recordings.list(workspace.id, {
        limit: 10,
        offset: 0,
        daemonId: daemonA,
      });
      expect(byDaemon).toMatchObject({ total: 2, totalBytes: 3000 });
      const byUsername = await storage.recordings.list(workspace.id, {
        limit: 10,
        offset: 0,
        username: "deploy",
      });
      expect(byUsername.items.map((r) => r.id)).toEqual([rows[1]!.id, rows[2]!.id]);
      const byUser = await storage.recordings.list(workspace.id, {
        limit: 10,
        offset: 0,
        userId: alice,
        daemonId: daemonB,
      });
      expect(byUser.items.map((r) => r.id)).toEqual([rows[2]!.id]);
      expect(byUser).toMatchObject({ total: 1, totalBytes: 3000 });
      const beyond = await storage.recordings.list(workspace.id, { limit: 10, offset: 10 });
      expect(beyond).toEqual({ items: [], total: 3, totalBytes: 6000 });
      const none = await storage.recordings.list(workspace.id, { limit: 10, offset: 0, username: "nobody" });
      expect(none).toEqual({ items: [], total: 0, totalBytes: 0 });
    });

    test("recordings: delete removes the chunks, only in its workspace; the workspace takes its recordings", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const { workspace: other } = await seedWorkspace();
      const kept = aRecording(workspace.id);
      const gone = aRecording(workspace.id);
      for (const r of [kept, gone]) {
        await storage.recordings.insert(r);
        await storage.recordings.appendChunk(workspace.id, r.id, { seq: 0, data: bytes(10, 0) });
      }
      expect(await storage.recordings.delete(other.id, gone.id)).toBe(false);
      expect(await storage.recordings.delete(workspace.id, gone.id)).toBe(true);
      expect(await storage.recordings.delete(workspace.id, gone.id)).toBe(false);
      expect(await storage.recordings.findById(workspace.id, gone.id)).toBeNull();
      expect(await storage.recordings.scanChunks(workspace.id, gone.id, { limit: 10 })).toEqual([]);
      expect(await storage.recordings.scanChunks(workspace.id, kept.id, { limit: 10 })).toHaveLength(1);
      // The id is free again once its recording is gone.
      await storage.recordings.insert(aRecording(workspace.id, { id: gone.id }));
      await storage.workspaces.delete(workspace.id);
      expect(await storage.recordings.findById(workspace.id, kept.id)).toBeNull();
      expect(await storage.recordings.scanChunks(workspace.id, kept.id, { limit: 10 })).toEqual([]);
    });

    test("recordings: a recording outlives the daemon it recorded", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const daemonId = uid();
      await storage.daemons.insert({
        id: daemonId,
        workspaceId: workspace.id,
        targetId: null,
        name: `host-${uid().slice(0, 8)}`,
        status: "accepted",
        recordSessions: true,
        metadata: {},
        authPublicKey: "",
        authMethod: "tpm",
        onlineSince: null,
        createdAt: at(0),
        updatedAt: at(0),
      });
      const recording = aRecording(workspace.id, { daemonId });
      await storage.recordings.insert(recording);
      expect(await storage.daemons.delete(workspace.id, daemonId)).toBe(true);
      expect(await storage.recordings.findById(workspace.id, recording.id)).toEqual(recording);
    });

    test("recordings: a transaction that throws leaves neither the chunk nor the size behind", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const recording = aRecording(workspace.id);
      await storage.recordings.insert(recording);
      await expect(
        storage.transaction(async (tx) => {
          await tx.recordings.appendChunk(workspace.id, recording.id, { seq: 0, data: bytes(10, 0) });
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      expect(await storage.recordings.findById(workspace.id, recording.id)).toEqual(recording);
      expect(await storage.recordings.scanChunks(workspace.id, recording.id, { limit: 10 })).toEqual([]);
    });
  });
}

/**
 * The read cache of an exclusive SQLite storage: a write through the storage is seen by the very
 * next read (sessions revoked, users deleted with their sessions by cascade), a random mix of
 * writes and reads answers as an uncached storage does, appends by the writer thread are seen at
 * once, and a change made to the file by another program is seen within the entry lifetime.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditEventRecord, AuthSessionRecord, Storage, UserRecord } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createReadCache, entryLifetimeMs } from "../src/read-cache.js";

const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-read-cache-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = () => join(dir, `${randomUUID()}.db`);

const user = (id: string = randomUUID()): UserRecord => ({
  id,
  name: "Ada Lovelace",
  username: `ada-${id}`,
  email: `ada-${id}@example.com`,
  emailVerified: true,
  picture: "",
  passwordHash: null,
  enableEmailRecovery: false,
  createdAt: new Date(1_700_000_000_000),
  updatedAt: new Date(1_700_000_000_000),
});

const session = (userId: string, id: string = randomUUID()): AuthSessionRecord => ({
  id,
  userId,
  createdAt: new Date(1_700_000_000_000),
  expiresAt: new Date(4_000_000_000_000),
  revokedAt: null,
  ipAddress: "192.0.2.1",
  userAgent: "test",
});

async function withStorage<T>(exclusive: boolean, run: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await createSqliteStorage({ filename: file(), exclusive });
  try {
    return await run(storage);
  } finally {
    await storage.close();
  }
}

describe("an exclusive storage's cached reads", () => {
  it("see a revocation and a cascading delete at the very next read", async () => {
    await withStorage(true, async (storage) => {
      const owner = user();
      const live = session(owner.id);
      await storage.users.insert(owner);
      await storage.authSessions.insert(live);
      expect((await storage.authSessions.findById(live.id))?.revokedAt).toBeNull();
      expect((await storage.authSessions.findById(live.id))?.revokedAt).toBeNull();

      const at = new Date(1_700_000_100_000);
      await storage.authSessions.revoke(live.id, at);
      expect((await storage.authSessions.findById(live.id))?.revokedAt).toEqual(at);

      await storage.users.delete(owner.id);
      expect(await storage.authSessions.findById(live.id)).toBeNull();
    });
  });

  it("answer a random mix of writes and reads as an uncached storage does", async () => {
    const target = fc.nat(3);
    const step = fc.oneof(
      fc.record({ kind: fc.constant("find" as const), session: target }),
      fc.record({ kind: fc.constant("insert" as const), session: target }),
      fc.record({ kind: fc.constant("revoke" as const), session: target }),
      fc.record({ kind: fc.constant("revokeAll" as const), session: target }),
      fc.record({ kind: fc.constant("deleteUser" as const), session: target }),
      fc.record({ kind: fc.constant("transaction" as const), session: target, fail: fc.boolean() }),
    );
    type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;
    const replay = (exclusive: boolean, steps: readonly Step[], ids: readonly string[], owner: UserRecord) =>
      withStorage(exclusive, async (storage) => {
        await storage.users.insert(owner);
        const seen: unknown[] = [];
        for (const [i, s] of steps.entries()) {
          const at = new Date(1_700_000_000_000 + i * 1000);
          const id = ids[s.session]!;
          const outcome = await (async () => {
            switch (s.kind) {
              case "find":
                return storage.authSessions.findById(id);
              case "insert":
                return storage.authSessions.insert(session(owner.id, id)).catch((e: Error) => e.name);
              case "revoke":
                return storage.authSessions.revoke(id, at);
              case "revokeAll":
                return storage.authSessions.revokeAllForUser(owner.id, at, id);
              case "deleteUser":
                await storage.users.delete(owner.id);
                return storage.users.insert(owner);
              case "transaction":
                return storage
                  .transaction(async (tx) => {
                    await tx.authSessions.revoke(id, at);
                    if (s.fail) throw new Error("rolled back");
                  })
                  .catch((e: Error) => e.message);
            }
          })();
          seen.push(
            outcome ?? null,
            ...(await Promise.all(ids.map((each) => storage.authSessions.findById(each)))),
          );
        }
        return seen;
      });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const ids: string[] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        const owner = user();
        expect(await replay(true, steps, ids, owner)).toEqual(await replay(false, steps, ids, owner));
      }),
      { numRuns: 25 },
    );
  });

  it("see the writer thread's appends at once", async () => {
    await withStorage(true, async (storage) => {
      const owner = user();
      const workspaceId = randomUUID();
      await storage.users.insert(owner);
      await storage.workspaces.insert({
        id: workspaceId,
        name: "Cache",
        description: "",
        createdBy: owner.id,
        enrollAutoApprove: false,
        enrollExpiresAt: null,
        inviteExpiresAt: null,
        createdAt: new Date(1_700_000_000_000),
        updatedAt: new Date(1_700_000_000_000),
      });
      const event = (n: number): AuditEventRecord => ({
        id: randomUUID(),
        workspaceId,
        actorId: owner.id,
        actorType: "user",
        action: "certificate.sign_ssh_user",
        resource: `issued_certificate:${n}`,
        ipAddress: "192.0.2.1",
        userAgent: "test",
        statusCode: "ok",
        requestId: randomUUID(),
        timestamp: new Date(1_700_000_000_000 + n),
      });
      for (let n = 1; n <= 3; n++) {
        await storage.append({ auditEvents: [event(n)] });
        const page = await storage.auditEvents.list(workspaceId, { limit: 10, offset: 0 });
        expect(page.items.map((e) => e.resource)).toContain(`issued_certificate:${n}`);
        expect(page.total).toBe(n);
      }
    });
  });

  it("see a change another program made to the file within the entry lifetime", async () => {
    const filename = file();
    const storage = await createSqliteStorage({ filename, exclusive: true });
    const other = new Database(filename);
    try {
      const owner = user();
      const live = session(owner.id);
      await storage.users.insert(owner);
      await storage.authSessions.insert(live);
      expect((await storage.authSessions.findById(live.id))?.revokedAt).toBeNull();
      other.prepare("update auth_sessions set revoked_at = 1700000100000 where id = ?").run(live.id);
      const changed = Date.now();
      while ((await storage.authSessions.findById(live.id))?.revokedAt == null) {
        expect(Date.now() - changed).toBeLessThan(entryLifetimeMs + 500);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      other.close();
      await storage.close();
    }
  });
});

describe("createReadCache", () => {
  const lookup = 'select * from "auth_sessions" where "id" = ?';
  const reader = (rows: unknown[]) => {
    let reads = 0;
    return {
      read: () => {
        reads++;
        return rows.map((row) => ({ ...(row as object) }));
      },
      reads: () => reads,
    };
  };

  it("serves a single-row read from memory until a statement that may change a row", () => {
    const cache = createReadCache();
    const source = reader([{ id: "a" }]);
    expect(cache.rows(lookup, ["a"], source.read)).toEqual([{ id: "a" }]);
    expect(cache.rows(lookup, ["a"], source.read)).toEqual([{ id: "a" }]);
    expect(source.reads()).toBe(1);
    for (const harmless of [
      lookup,
      'insert into "audit_events" ("id") values (?)',
      'insert into "issued_certificates" ("id") values (?)',
    ]) {
      cache.observe(harmless);
      cache.rows(lookup, ["a"], source.read);
    }
    expect(source.reads()).toBe(1);
    for (const write of [
      'update "auth_sessions" set "revoked_at" = ?',
      'delete from "users" where "id" = ?',
      "begin immediate",
      'insert into "users" ("id") values (?)',
      "pragma foreign_keys = ON",
      'with x as (select 1) delete from "workspaces"',
    ]) {
      const before = source.reads();
      cache.observe(write);
      cache.rows(lookup, ["a"], source.read);
      expect(source.reads(), write).toBe(before + 1);
    }
  });

  it("never caches reads of append-only tables, results of several rows, or byte parameters", () => {
    const cache = createReadCache();
    const cases: Array<[string, unknown[], unknown[]]> = [
      ['select * from "audit_events" where "id" = ?', ["a"], [{ id: "a" }]],
      ['select * from "issued_certificates" where "serial" = ?', ["1"], []],
      ['select * from "targets" where "workspace_id" = ?', ["w"], [{ id: "t1" }, { id: "t2" }]],
      [lookup, [Buffer.from("a")], [{ id: "a" }]],
    ];
    for (const [sql, parameters, rows] of cases) {
      const source = reader(rows);
      cache.rows(sql, parameters, source.read);
      cache.rows(sql, parameters, source.read);
      expect(source.reads(), sql).toBe(2);
    }
  });

  it("keys by every parameter and its type", () => {
    const cache = createReadCache();
    const byId = new Map<unknown, ReturnType<typeof reader>>();
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 30 }), (keys) => {
        for (const key of keys) {
          const source = byId.get(key) ?? reader([{ id: key }]);
          byId.set(key, source);
          expect(cache.rows(lookup, [key], source.read)).toEqual([{ id: key }]);
        }
      }),
    );
    expect(cache.rows(lookup, [1], () => [{ id: "number" }])).not.toEqual(
      cache.rows(lookup, ["1"], () => [{ id: "string" }]),
    );
  });

  it("expires entries after their lifetime and hands out copies of byte columns", () => {
    let now = 0;
    const cache = createReadCache(() => now);
    const source = reader([{ id: "a", key: Buffer.from([1, 2, 3]) }]);
    const first = cache.rows(lookup, ["a"], source.read) as Array<{ key: Buffer }>;
    first[0]!.key.fill(0);
    const second = cache.rows(lookup, ["a"], source.read) as Array<{ key: Buffer }>;
    expect([...second[0]!.key]).toEqual([1, 2, 3]);
    second[0]!.key.fill(0);
    expect([...(cache.rows(lookup, ["a"], source.read) as Array<{ key: Buffer }>)[0]!.key]).toEqual([
      1, 2, 3,
    ]);
    expect(source.reads()).toBe(1);
    now += entryLifetimeMs;
    cache.rows(lookup, ["a"], source.read);
    expect(source.reads()).toBe(2);
  });
});

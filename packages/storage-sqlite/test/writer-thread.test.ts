/**
 * The writer thread of `Storage.append` (append-writer.ts starting writer-thread.js) on a real
 * database file: batches committed together, a unit breaking a constraint failing alone, the
 * audit chain's hash computed as the main connection computes it, a failed batch leaving the
 * thread usable, and a thread closed or gone started again for the next batch.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chainHash } from "@wap/core/storage";
import type { AppendStatements } from "@wap/storage-sql";
import BetterSqlite3 from "better-sqlite3";
import fc from "fast-check";
import type { CompiledQuery } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AppendWriter, createAppendWriter } from "../src/append-writer.js";
import { sqliteTraits } from "../src/dialect.js";

let dir: string;
let filename: string;
let writer: AppendWriter;

const query = (sql: string, parameters: readonly unknown[]): CompiledQuery =>
  ({ sql, parameters, query: { kind: "RawNode" } }) as unknown as CompiledQuery;
const insert = (key: string, value: number) =>
  query("insert into entries (key, value) values (?, ?)", [key, value]);
const unit = (...queries: CompiledQuery[]): AppendStatements => queries;

/** The rows of the file as another connection reads them. */
function rows(): Array<{ key: string; value: number }> {
  const db = new BetterSqlite3(filename, { readonly: true });
  try {
    return db.prepare("select key, value from entries order by key").all() as Array<{
      key: string;
      value: number;
    }>;
  } finally {
    db.close();
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "wap-writer-thread-"));
  filename = join(dir, "wap.db");
  const db = new BetterSqlite3(filename);
  db.pragma("journal_mode = WAL");
  db.exec("create table entries (key text primary key, value integer not null)");
  db.exec("create table hashes (hash blob not null)");
  db.close();
  writer = createAppendWriter({ filename, busyTimeoutMs: 5000 });
});

afterEach(async () => {
  await writer.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the SQLite writer thread", () => {
  it("commits every unit of a batch, and batches after it reuse the statements it was sent", async () => {
    expect(await writer.commit([unit(insert("a", 1), insert("b", 2)), unit(insert("c", 3))])).toEqual([
      undefined,
      undefined,
    ]);
    expect(await writer.commit([unit(insert("d", 4))])).toEqual([undefined]);
    expect(rows()).toEqual([
      { key: "a", value: 1 },
      { key: "b", value: 2 },
      { key: "c", value: 3 },
      { key: "d", value: 4 },
    ]);
  });

  it("fails a unit that breaks a constraint alone, with an error the dialect reads as the driver's", async () => {
    await writer.commit([unit(insert("taken", 1))]);
    const outcomes = await writer.commit([
      unit(insert("x", 1)),
      unit(insert("y", 2), insert("taken", 2)),
      unit(insert("z", 3)),
    ]);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[2]).toBeUndefined();
    expect(outcomes[1]).toBeInstanceOf(Error);
    expect(sqliteTraits.classifyError(outcomes[1])).toEqual({ kind: "unique", columns: ["entries.key"] });
    // The failed unit's first statement is undone with it.
    expect(rows().map((r) => r.key)).toEqual(["taken", "x", "z"]);
  });

  it("computes the audit chain's step as @wap/core's chainHash does", async () => {
    const previous = Buffer.alloc(32, 7);
    const content = Buffer.from("an audit entry's content");
    await writer.commit([
      unit(query("insert into hashes (hash) values (wap_chain_hash(?, ?, ?))", [previous, 41, content])),
    ]);
    const db = new BetterSqlite3(filename, { readonly: true });
    const { hash } = db.prepare("select hash from hashes").get() as { hash: Buffer };
    db.close();
    expect(Buffer.from(hash)).toEqual(Buffer.from(chainHash(previous, 41, content)));
  });

  it("rejects a batch that fails as a whole, writes nothing of it, and serves the next batch", async () => {
    const failed = await writer
      .commit([unit(insert("kept-out", 1)), unit(query("insert into missing (x) values (?)", [1]))])
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(Error);
    expect(String((failed as Error).message)).toMatch(/no such table: missing/);
    expect(await writer.commit([unit(insert("after", 1))])).toEqual([undefined]);
    expect(rows().map((r) => r.key)).toEqual(["after"]);
  });

  it("starts a new thread for the batch after close()", async () => {
    await writer.commit([unit(insert("before", 1))]);
    await writer.close();
    // The new thread knows no statement numbers yet: the SQL is sent again.
    expect(await writer.commit([unit(insert("after", 2))])).toEqual([undefined]);
    expect(rows().map((r) => r.key)).toEqual(["after", "before"]);
  });

  it("property: a batch writes exactly the units whose keys are free, the first of a repeated key winning", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(fc.constantFrom("k1", "k2", "k3", "k4", "k5", "k6"), { minLength: 1, maxLength: 3 }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        async (keysOfUnits) => {
          const db = new BetterSqlite3(filename);
          db.exec("delete from entries");
          db.close();
          const outcomes = await writer.commit(
            keysOfUnits.map((keys, u) => unit(...keys.map((key) => insert(key, u)))),
          );
          const taken = new Map<string, number>();
          keysOfUnits.forEach((keys, u) => {
            const fits = new Set(keys).size === keys.length && keys.every((key) => !taken.has(key));
            expect(outcomes[u] === undefined).toBe(fits);
            if (fits) for (const key of keys) taken.set(key, u);
          });
          expect(rows()).toEqual(
            [...taken].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => ({ key, value })),
          );
        },
      ),
      { numRuns: 30 },
    );
  });
});

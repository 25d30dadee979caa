import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runStorageContract } from "@wap/core/testing";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { afterAll } from "vitest";

// Exclusive, as the server opens its database: the rows every request reads are kept in memory,
// and every write must still be seen by the next read.
runStorageContract({
  name: "sqlite :memory:, exclusive",
  create: () => createSqliteStorage({ filename: ":memory:", exclusive: true, strictTransactions: true }),
});

// A file database shared by every test: also proves the migrations run once and then no-op.
const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
runStorageContract({
  name: "sqlite file",
  create: () => createSqliteStorage({ filename: join(dir, "wap.db"), strictTransactions: true }),
});

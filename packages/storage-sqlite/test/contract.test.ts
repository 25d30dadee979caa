import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runStorageContract } from "@wap/core/testing";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { afterAll } from "vitest";

runStorageContract({ name: "sqlite :memory:", create: () => createSqliteStorage({ filename: ":memory:" }) });

// A file database shared by every test: also proves the migrations run once and then no-op.
const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-contract-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
runStorageContract({
  name: "sqlite file",
  create: () => createSqliteStorage({ filename: join(dir, "wap.db") }),
});

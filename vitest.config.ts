import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { projects } from "./vitest.workspace.js";

export default defineConfig({
  resolve: {
    // Run every package from its TypeScript source: no build step between an edit and a test.
    conditions: ["dev-source"],
  },
  ssr: { resolve: { conditions: ["dev-source"], externalConditions: ["dev-source"] } },
  test: {
    projects,
    // Before the first test: the programs the suite drives, installed or asked for (one list).
    globalSetup: [fileURLToPath(new URL("packages/test-kit/src/global-setup.ts", import.meta.url))],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // better-sqlite3 and node:crypto keys work in forks; worker threads would share OpenSSL locks.
    pool: "forks",
    // Most test time is spent waiting on the programs and servers a test drives (sshd, chromium,
    // child servers, PostgreSQL), so one process more than the cores keeps them busy.
    maxWorkers: availableParallelism() + 1,
  },
});

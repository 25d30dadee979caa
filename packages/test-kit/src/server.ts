/**
 * Starts the real server for a test file: port 0, SQLite in a temporary directory, fast argon2,
 * logs captured so tests can read them (and check that no secret reaches them).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createArgon2PasswordHasher } from "@wap/core";
import { createJsonLogger, createServer, type RunningServer, type ServerOptions } from "@wap/server";

export interface TestServer extends RunningServer {
  readonly dataDir: string;
  /** Every log line written so far. */
  readonly logs: string[];
}

/** Generous limits: tests that are not about rate limiting must never hit them. */
export const noRateLimit = { authenticatedPoints: 0, anonymousPoints: 0 } as const;

export async function startTestServer(options: ServerOptions = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "wap-server-test-"));
  const logs: string[] = [];
  const server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir,
    rateLimit: noRateLimit,
    logger: createJsonLogger("debug", (line) => logs.push(line)),
    shutdownGraceSeconds: 2,
    // A storage call that should have gone through the transaction's `tx` fails the test.
    strictTransactions: true,
    ...options,
    platformOptions: {
      passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
      ...options.platformOptions,
    },
  }).catch(async (error: unknown) => {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  });
  return {
    ...server,
    url: server.url,
    port: server.port,
    platform: server.platform,
    dataDir,
    logs,
    async close() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

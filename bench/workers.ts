/**
 * Worker processes: authenticated GetCertificateAuthority against the real `wap-server` binary
 * over PostgreSQL, with one worker (the baseline) and with two (`--workers 2`), side by side in
 * the same run. The load is h2load over several connections, since the primary hands out
 * connections, not requests: one connection would keep one worker busy and the other idle.
 *
 * Needs PostgreSQL: BENCH_DATABASE_URL (default WAP_TEST_DATABASE_URL), a database the benchmark
 * may create schemas in (each server runs in a fresh one, dropped afterwards). Both servers log at
 * `info` (every request, as by default), to a pipe the benchmark drains.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { CertificateKeyType } from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { h2loadAvailable, runH2load } from "./h2load.js";
import { intervalSeconds, type LoadResult, type RequestSpec } from "./http2-load.js";
import { freshBenchSchema } from "./postgres-schema.js";
import type { BenchFigure, BenchSection } from "./results.js";
import { signUpWorkspaceOwner } from "./workspace-owner.js";

export interface WorkersBenchOptions {
  readonly seconds: number;
  readonly concurrency: number;
  /** HTTP/2 connections the load is spread over (default 4). */
  readonly connections?: number;
}

const repoRoot = join(import.meta.dirname, "..");
const bin = "packages/server/src/bin.ts";

/** Runs GetCertificateAuthority against 1 then 2 workers; one section with both. */
export async function runWorkersBench(options: WorkersBenchOptions): Promise<BenchSection> {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? process.env.WAP_TEST_DATABASE_URL;
  if (databaseUrl === undefined || !/^postgres(ql)?:/.test(databaseUrl)) {
    throw new Error("the workers benchmark needs PostgreSQL: set BENCH_DATABASE_URL=postgres://...");
  }
  if (!h2loadAvailable()) {
    throw new Error("the workers benchmark needs h2load (Debian: apt-get install nghttp2-client)");
  }
  const connections = options.connections ?? 4;
  const masterKey = formatMasterKey(generateMasterKey());
  const runs: { workers: number; result: LoadResult }[] = [];
  for (const workers of [1, 2]) {
    const schema = await freshBenchSchema(databaseUrl);
    const server = await startServer({ databaseUrl: schema.url, masterKey, workers });
    try {
      const spec = await getCaRequest(server.url);
      await runH2load(server.url, spec, { seconds: 1, concurrency: options.concurrency, connections });
      const result = await runH2load(server.url, spec, {
        seconds: options.seconds,
        concurrency: options.concurrency,
        connections,
      });
      runs.push({ workers, result });
      console.log(
        `${workers} worker(s): ${result.perSecond.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, ${result.errors} failed`,
      );
    } finally {
      await server.stop();
      await schema.drop();
    }
  }
  return workersSection(options, connections, runs);
}

/** A fresh owner's GetCertificateAuthority of a fresh CA, as h2load sends it. */
async function getCaRequest(baseUrl: string): Promise<RequestSpec> {
  const client = createPlatformClient({ baseUrl });
  const handle = `bench-${randomUUID().slice(0, 8)}`;
  const { accessToken, workspaceId } = await signUpWorkspaceOwner(client, "Bench Mark", handle);
  const { certificateAuthority } = await client.certificates.createCertificateAuthority({
    workspaceId,
    name: "bench-ca",
    keyType: CertificateKeyType.ED25519,
  });
  return {
    method: "POST",
    path: "/platform.v1.CertificateService/GetCertificateAuthority",
    headers: {
      "content-type": "application/json",
      "connect-protocol-version": "1",
      authorization: `Bearer ${accessToken}`,
    },
    body: JSON.stringify({ workspaceId, id: certificateAuthority!.id }),
  };
}

interface StartedServer {
  readonly url: string;
  stop(): Promise<void>;
}

/** `wap-server --workers <n>` on a free port; resolves once every worker listens. */
function startServer(settings: { databaseUrl: string; masterKey: string; workers: number }) {
  const child: ChildProcess = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", bin], {
    cwd: repoRoot,
    env: {
      ...process.env,
      WAP_DATABASE_URL: settings.databaseUrl,
      WAP_MASTER_KEY: settings.masterKey,
      WAP_HOST: "127.0.0.1",
      WAP_PORT: "0",
      WAP_WORKERS: String(settings.workers),
      WAP_RATE_LIMIT: "0",
      WAP_RATE_LIMIT_ANONYMOUS: "0",
      WAP_LOG_LEVEL: "info",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise<StartedServer>((resolve, reject) => {
    let head = "";
    let listening = 0;
    let url = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString();
      const lines = head.split("\n");
      head = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.includes('"msg":"listening"')) continue;
        url = JSON.parse(line).url as string;
        listening++;
      }
      if (listening < settings.workers) return;
      // Keep draining the request log, unread.
      child.stderr?.off("data", onData);
      child.stderr?.resume();
      resolve({
        url,
        async stop() {
          child.kill("SIGTERM");
          await exited;
        },
      });
    };
    child.stderr?.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`wap-server --workers ${settings.workers} exited (${code})`)),
    );
  });
}

const round = (value: number, digits = 0) => Number(value.toFixed(digits));

function workersSection(
  options: WorkersBenchOptions,
  connections: number,
  runs: readonly { workers: number; result: LoadResult }[],
): BenchSection {
  const figuresOf = (workers: number, r: LoadResult): BenchFigure[] => {
    const name = `GetCertificateAuthority, ${workers} worker${workers === 1 ? "" : "s"}`;
    return [
      { label: `${name}: throughput`, value: round(r.perSecond), unit: "req/s" },
      { label: `${name}: latency p50`, value: round(r.p50Ms, 2), unit: "ms" },
      { label: `${name}: latency p99`, value: round(r.p99Ms, 2), unit: "ms" },
      { label: `${name}: failed requests`, value: r.errors, unit: "requests" },
    ];
  };
  const [one, two] = runs;
  const oneFigures = one ? figuresOf(one.workers, one.result) : [];
  const twoFigures = two ? figuresOf(two.workers, two.result) : [];
  return {
    title: "Worker processes over PostgreSQL",
    method: `The wap-server binary with --workers 1 (baseline) then --workers 2, over PostgreSQL, logging every request at info. Load: h2load, ${options.concurrency} concurrent requests over ${connections} HTTP/2 connections, ${options.seconds} s each after a 1 s warm-up. Subject: authenticated GetCertificateAuthority over Connect JSON. Throughput is sampled every ${intervalSeconds} s.`,
    figures: [...oneFigures, ...twoFigures],
    comparisons:
      one && two
        ? [0, 1, 2].map((i) => ({
            subject: twoFigures[i]!,
            baseline: oneFigures[i]!,
            ratio: oneFigures[i]!.value > 0 ? round(twoFigures[i]!.value / oneFigures[i]!.value, 3) : 0,
          }))
        : [],
    targets: [],
    series: runs.map(({ workers, result }) => ({
      label: `${workers} worker(s)`,
      xUnit: "s",
      yUnit: "req/s",
      points: result.throughput,
    })),
    notes: [
      "The load generator, PostgreSQL and the workers share the machine's cores: on a two-core machine a second worker competes with them, so the gain is well below 2×; on a machine busy with other work the figures are noise.",
      "Single-process figures from the other sections run over SQLite in the benchmark's own process: compare the two rows here with each other, not with those.",
    ],
  };
}

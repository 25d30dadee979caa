/**
 * The request path under load, each subject next to a baseline measured in the same run:
 *
 * 1. Authenticated GetCertificateAuthority (Connect JSON over HTTP/2: bearer check, session
 *    lookup, rate limiter, validation, workspace access, storage read) against a bare Hono route
 *    (`GET /healthz`) on the same server, through the same HTTP/2 client.
 * 2. SignSSHCertificate end to end (the same path, plus key parsing, an Ed25519 signature, and the
 *    ledger entry and audit event committed to the SQLite file before the answer), in Connect
 *    JSON and in Connect binary (what @wap/client sends), against raw `crypto.sign` Ed25519 over
 *    a certificate-sized message, measured in the same process.
 *
 * The load comes from another process: h2load when it is installed (h2load.ts: a C client that
 * leaves the server nearly all of the two cores), else the Node generator of http2-load.ts in a
 * child process. `load` chooses one.
 */
import { generateKeyPairSync, sign } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import {
  CertificateKeyType,
  SignSSHCertificateRequest_CertificateType as CertificateType,
  SignSSHCertificateRequestSchema,
} from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { createJsonLogger, createServer, silentLogger } from "@wap/server";
import { callBudget, profileWhile } from "./call-budget.js";
import { h2loadAvailable, runH2load } from "./h2load.js";
import { intervalSeconds, type LoadResult, type RequestSpec, runLoadInChild } from "./http2-load.js";
import { cpuUs } from "./process-cpu.js";
import type { BenchComparison, BenchFigure, BenchSection, BenchSeries } from "./results.js";
import { ed25519PublicKeyLine } from "./ssh-key.js";
import { signUpWorkspaceOwner } from "./workspace-owner.js";

/** The measures of this benchmark, as BENCH_ONLY names them. */
export const requestPathMeasures = ["healthz", "get-ca", "sign", "sign-binary", "raw"] as const;
export type RequestPathMeasure = (typeof requestPathMeasures)[number];

export interface RequestPathOptions {
  readonly seconds: number;
  readonly concurrency: number;
  /** The measures to run; the others are left out of the sections. */
  readonly only: ReadonlySet<string>;
  /** e.g. `info` logs every request to stderr as the server does by default. Default: silent. */
  readonly logLevel?: string;
  /** The load generator: `h2load`, `node`, or (default) h2load when it is installed. */
  readonly load?: string;
  /** Profile a second run of GetCertificateAuthority and SignSSHCertificate (JSON) for the call budget. */
  readonly profile?: boolean;
}

/** The load generator of a run and its name for the report. */
function loadGenerator(choice: string | undefined) {
  const h2load = choice === "h2load" || (choice !== "node" && h2loadAvailable());
  if (choice === "h2load" && !h2loadAvailable()) {
    throw new Error(
      "BENCH_LOAD=h2load, but h2load is not installed (Debian: apt-get install nghttp2-client)",
    );
  }
  return h2load
    ? { name: "h2load (nghttp2)", run: runH2load }
    : { name: `the Node HTTP/2 client in a child process (Node ${process.version})`, run: runLoadInChild };
}

/** SignSSHCertificate end to end must reach this rate. */
export const signingTargetPerSecond = 5000;

/** What one call may cost, held against every run of both RPCs. */
const callTargets = {
  /** Event loop µs per authenticated GetCertificateAuthority. */
  readUs: 100,
  /** Its throughput as a share of the bare route's in the same run. */
  readShare: 0.3,
  /** Server CPU µs (every thread) per certificate. */
  signUs: 200,
  /** p99 latency at the run's concurrency (32 by default), both RPCs. */
  p99Ms: 15,
};

function target(figure: string, comparison: "<=" | ">=", value: number, unit: string, measured: number) {
  return {
    figure,
    comparison,
    value,
    unit,
    met: comparison === "<=" ? measured <= value : measured >= value,
  };
}

type Measured = LoadResult & {
  serverCpuUsPerRequest: number;
  serverMainThreadUsPerRequest: number;
  /** Share of the run the event loop was not waiting for I/O (performance.eventLoopUtilization). */
  eventLoopUtilization: number;
  /** Where the event loop's time per request went, from a profiled second run. */
  budget?: ReturnType<typeof callBudget>;
};

/** The measures profiled for the call budget. */
const profiled: ReadonlySet<RequestPathMeasure> = new Set(["get-ca", "sign"]);

/** Runs the measures asked for; returns one section per subject that was measured. */
export async function runRequestPathBench(options: RequestPathOptions): Promise<BenchSection[]> {
  const { seconds, concurrency, only } = options;
  const generator = loadGenerator(options.load);
  const dataDir = await mkdtemp(join(tmpdir(), "wap-bench-"));
  const server = await createServer({
    port: 0,
    dataDir,
    logger: options.logLevel
      ? createJsonLogger(options.logLevel as Parameters<typeof createJsonLogger>[0])
      : silentLogger,
    // The benchmark measures request handling, not the limiter's refusals.
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
  });

  try {
    const client = createPlatformClient({ baseUrl: server.url });
    const { accessToken, workspaceId } = await signUpWorkspaceOwner(client, "Bench Mark", "bench");
    const { certificateAuthority } = await client.certificates.createCertificateAuthority({
      workspaceId,
      name: "bench-ca",
      keyType: CertificateKeyType.ED25519,
    });

    const getCa: RequestSpec = {
      method: "POST",
      path: "/platform.v1.CertificateService/GetCertificateAuthority",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        authorization: `Bearer ${accessToken}`,
      },
      body: JSON.stringify({ workspaceId, id: certificateAuthority!.id }),
    };
    const healthz: RequestSpec = { method: "GET", path: "/healthz" };
    const signRequest = {
      workspaceId,
      caId: certificateAuthority!.id,
      type: CertificateType.USER,
      publicKey: ed25519PublicKeyLine("bench@platform"),
    };
    const signSsh: RequestSpec = {
      method: "POST",
      path: "/platform.v1.CertificateService/SignSSHCertificate",
      headers: getCa.headers,
      body: toJsonString(
        SignSSHCertificateRequestSchema,
        create(SignSSHCertificateRequestSchema, signRequest),
      ),
    };
    const signSshBinary: RequestSpec = {
      ...signSsh,
      headers: { ...getCa.headers, "content-type": "application/proto" },
      body: toBinary(SignSSHCertificateRequestSchema, create(SignSSHCertificateRequestSchema, signRequest)),
    };

    const measure = async (name: RequestPathMeasure, spec: RequestSpec): Promise<Measured | null> => {
      if (!only.has(name)) return null;
      await generator.run(server.url, spec, { seconds: 1, concurrency }); // warm-up: JIT, caches, connections
      const cpuBefore = process.cpuUsage();
      const mainBefore = mainThreadCpuUs();
      const loopBefore = performance.eventLoopUtilization();
      const result = await generator.run(server.url, spec, { seconds, concurrency });
      const loop = performance.eventLoopUtilization(loopBefore);
      const cpu = process.cpuUsage(cpuBefore);
      const main = mainThreadCpuUs() - mainBefore;
      const requests = Math.max(1, result.requests);
      const serverMainThreadUsPerRequest = main / requests;
      const budget =
        options.profile !== false && profiled.has(name)
          ? callBudget(
              await profileWhile(() => generator.run(server.url, spec, { seconds, concurrency })),
              serverMainThreadUsPerRequest,
            )
          : undefined;
      return {
        ...result,
        serverCpuUsPerRequest: (cpu.user + cpu.system) / requests,
        serverMainThreadUsPerRequest,
        eventLoopUtilization: loop.utilization,
        budget,
      };
    };
    const baseline = await measure("healthz", healthz);
    const subject = await measure("get-ca", getCa);
    const storage = server.platform.services.storage;
    // The ledger's list does not count (its `total` is exact only on the last page): read it all,
    // a few tens of thousands of entries at most here.
    const ledgerSize = async () =>
      (await storage.issuedCertificates.list(workspaceId, { limit: 10_000_000, offset: 0 })).items.length;
    const ledgerBefore = await ledgerSize();
    const signing = await measure("sign", signSsh);
    const signingBinary = await measure("sign-binary", signSshBinary);
    const ledgerAfter = await ledgerSize();
    const audited = await storage.auditEvents.list(workspaceId, {
      limit: 1,
      offset: 0,
      action: "certificate.sign_ssh_user",
    });
    const rawSign = only.has("raw") ? measureRawEd25519(seconds) : null;

    const load = `HTTP/2 from ${generator.name}, ${concurrency} concurrent requests on one connection, ${seconds} s each after a 1 s warm-up; server on Node ${process.version}`;
    if (baseline || subject) {
      console.log(`\n${load}\n`);
      printTable([
        ["bare Hono route GET /healthz (baseline)", baseline],
        ["authenticated GetCertificateAuthority (Connect JSON)", subject],
      ]);
      if (baseline && subject) {
        console.log(
          `\nratio GetCertificateAuthority / baseline: ${ratio(subject.perSecond, baseline.perSecond)}`,
        );
      }
    }
    const signings = [
      { format: "Connect JSON", measured: signing },
      { format: "Connect binary", measured: signingBinary },
    ].filter((run): run is SigningRun => run.measured !== null);
    if (signings.length > 0 || rawSign !== null) {
      console.log("\nSSH certificates per second (Ed25519 CA, Ed25519 user key)\n");
      printTable(
        signings.map(({ format, measured }) => [
          `SignSSHCertificate end to end (${format}, ledger + audit committed)`,
          measured,
        ]),
      );
      if (rawSign !== null)
        console.log(`raw crypto.sign Ed25519 (one core, same process): ${rawSign.toFixed(0)} signatures/s`);
      for (const { format, measured } of rawSign === null ? [] : signings) {
        console.log(
          `ratio SignSSHCertificate (${format}) / raw Ed25519 signing: ${ratio(measured.perSecond, rawSign!)}`,
        );
      }
      if (signings.length > 0) {
        // Warm-up requests are signed too: every answered request must have its ledger and audit rows.
        console.log(
          `ledger entries written in the run: ${ledgerAfter - ledgerBefore}; audit events of issuance in total: ${audited.total}`,
        );
      }
    }

    const sections: BenchSection[] = [];
    if (baseline || subject) sections.push(requestSection(load, baseline, subject));
    if (signings.length > 0 || rawSign !== null) {
      const answered = signings.reduce((n, run) => n + run.measured.requests, 0);
      const unrecorded =
        signings.length > 0 && (ledgerAfter - ledgerBefore < answered || audited.total !== ledgerAfter);
      sections.push(
        signingSection(load, signings, rawSign, { written: ledgerAfter - ledgerBefore, unrecorded }),
      );
      if (unrecorded) {
        console.error("\nsome certificates were answered without their ledger entry or audit event");
        process.exitCode = 1;
      }
    }
    const failed = [baseline, subject, signing, signingBinary].reduce((n, r) => n + (r?.errors ?? 0), 0);
    if (failed > 0) {
      console.error(`\n${failed} requests failed: the figures above are not valid`);
      process.exitCode = 1;
    }
    return sections;
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// --- sections ------------------------------------------------------------------------------------

const ratio = (subject: number, baseline: number) => (baseline > 0 ? round(subject / baseline, 3) : 0);
const round = (value: number, digits = 0) => Number(value.toFixed(digits));

/** The figures of one load run, labelled with `name`. */
function loadFigures(name: string, r: Measured, rateUnit: string): BenchFigure[] {
  return [
    { label: `${name}: throughput`, value: round(r.perSecond), unit: rateUnit },
    { label: `${name}: latency p50`, value: round(r.p50Ms, 2), unit: "ms" },
    { label: `${name}: latency p90`, value: round(r.p90Ms, 2), unit: "ms" },
    { label: `${name}: latency p99`, value: round(r.p99Ms, 2), unit: "ms" },
    { label: `${name}: server CPU per request`, value: round(r.serverCpuUsPerRequest), unit: "µs" },
    { label: `${name}: event loop per request`, value: round(r.serverMainThreadUsPerRequest), unit: "µs" },
    { label: `${name}: event loop busy`, value: round(r.eventLoopUtilization * 100), unit: "% of the run" },
    { label: `${name}: load generator CPU per request`, value: round(r.clientCpuUsPerRequest), unit: "µs" },
    { label: `${name}: requests`, value: r.requests, unit: "requests" },
    { label: `${name}: failed requests`, value: r.errors, unit: "requests" },
    ...(r.budget ?? []).map(({ part, microseconds }) => ({
      label: `${name}: event loop per request, ${part}`,
      value: round(microseconds),
      unit: "µs",
    })),
  ];
}

function loadSeries(name: string, r: Measured, rateUnit: string): BenchSeries[] {
  return [
    { label: name, xUnit: "s", yUnit: rateUnit, points: r.throughput },
    { label: name, xUnit: "percentile", yUnit: "ms", points: r.latencyCurve },
  ];
}

/** Subject against baseline for the figures both runs have (throughput, p50, p99). */
function pairs(subject: BenchFigure[], baseline: BenchFigure[]): BenchComparison[] {
  return [0, 1, 3].map((i) => ({
    subject: subject[i]!,
    baseline: baseline[i]!,
    ratio: ratio(subject[i]!.value, baseline[i]!.value),
  }));
}

function requestSection(load: string, baseline: Measured | null, subject: Measured | null): BenchSection {
  const bare = baseline ? loadFigures("GET /healthz (baseline)", baseline, "req/s") : [];
  const rpc = subject ? loadFigures("GetCertificateAuthority", subject, "req/s") : [];
  const share: BenchFigure | null =
    baseline && subject
      ? {
          label: "GetCertificateAuthority throughput / GET /healthz throughput",
          value: ratio(subject.perSecond, baseline.perSecond),
          unit: "×",
        }
      : null;
  return {
    title: "Authenticated RPC against a bare route",
    method: `${load}. Subject: GetCertificateAuthority over Connect JSON (bearer token, session lookup, rate limiter, validation, workspace access, storage read). Baseline: GET /healthz, a bare Hono route on the same server, through the same client. Throughput is sampled every ${intervalSeconds} s.`,
    figures: [...bare, ...rpc, ...(share ? [share] : [])],
    comparisons: baseline && subject ? pairs(rpc, bare) : [],
    targets: subject
      ? [
          target(rpc[5]!.label, "<=", callTargets.readUs, "µs", subject.serverMainThreadUsPerRequest),
          target(rpc[3]!.label, "<=", callTargets.p99Ms, "ms", subject.p99Ms),
          ...(share ? [target(share.label, ">=", callTargets.readShare, "×", share.value)] : []),
        ]
      : [],
    series: [
      ...(baseline ? loadSeries("GET /healthz", baseline, "req/s") : []),
      ...(subject ? loadSeries("GetCertificateAuthority", subject, "req/s") : []),
    ],
    notes: [
      "Server CPU counts every thread of the server process (GC and libuv helpers included); the event loop figure is its main thread alone, which bounds the rate at 1e6 / (µs per request).",
      ...(baseline && subject ? [] : ["Run with BENCH_ONLY: one side of the comparison was not measured."]),
    ],
  };
}

/** One SignSSHCertificate run and the message format it sent. */
interface SigningRun {
  readonly format: string;
  readonly measured: Measured;
}

function signingSection(
  load: string,
  signings: readonly SigningRun[],
  rawSign: number | null,
  ledger: { written: number; unrecorded: boolean },
): BenchSection {
  const runs = signings.map(({ format, measured }) => ({
    format,
    measured,
    figures: loadFigures(`SignSSHCertificate end to end (${format})`, measured, "certificates/s"),
  }));
  const raw: BenchFigure | null =
    rawSign === null
      ? null
      : {
          label: "raw crypto.sign Ed25519 (one core, same process)",
          value: round(rawSign),
          unit: "signatures/s",
        };
  return {
    title: "SSH certificate issuance",
    method: `${load}. Subject: SignSSHCertificate for an Ed25519 user key with an Ed25519 CA, in Connect JSON and in Connect binary (the format @wap/client sends), answered once its ledger entry and audit event are committed to the SQLite file (group commit). Baseline: Ed25519 signatures of a certificate-sized message with crypto.sign, one thread, the same number of seconds.`,
    figures: [
      ...runs.flatMap((run) => run.figures),
      ...(raw ? [raw] : []),
      ...(runs.length > 0
        ? [{ label: "ledger entries written (warm-up included)", value: ledger.written, unit: "entries" }]
        : []),
    ],
    comparisons: raw
      ? runs.map((run) => ({
          subject: run.figures[0]!,
          baseline: raw,
          ratio: ratio(run.measured.perSecond, raw.value),
        }))
      : [],
    targets: runs.flatMap(({ figures, measured }) => [
      target(figures[0]!.label, ">=", signingTargetPerSecond, "certificates/s", measured.perSecond),
      target(figures[4]!.label, "<=", callTargets.signUs, "µs", measured.serverCpuUsPerRequest),
      target(figures[3]!.label, "<=", callTargets.p99Ms, "ms", measured.p99Ms),
    ]),
    series: runs.flatMap((run) =>
      loadSeries(`SignSSHCertificate (${run.format})`, run.measured, "certificates/s"),
    ),
    notes: [
      ...(runs.length > 0 && !ledger.unrecorded
        ? ["Every answered certificate has its ledger entry and its audit event (checked after the run)."]
        : []),
      ...(ledger.unrecorded
        ? ["Some certificates were answered without their ledger entry or audit event."]
        : []),
      ...(runs.length > 0 && raw
        ? []
        : ["Run with BENCH_ONLY: one side of the comparison was not measured."]),
    ],
  };
}

// --- measuring -----------------------------------------------------------------------------------

/**
 * CPU time of this process's main thread (the event loop) in µs (0 where /proc is missing).
 * Unlike `process.cpuUsage`, it leaves out the GC and libuv helper threads: the event loop's
 * share bounds the request rate, at most 1e6 / (main-thread µs per request).
 */
function mainThreadCpuUs(): number {
  try {
    return cpuUs(process.pid, process.pid);
  } catch {
    return 0;
  }
}

/** Ed25519 signatures per second over a certificate-sized message, on this thread. */
function measureRawEd25519(seconds: number): number {
  const { privateKey } = generateKeyPairSync("ed25519");
  const message = Buffer.alloc(330, 7);
  const run = (ms: number) => {
    let count = 0;
    const end = performance.now() + ms;
    while (performance.now() < end) {
      for (let i = 0; i < 100; i++) sign(null, message, privateKey);
      count += 100;
    }
    return count;
  };
  run(500);
  const started = performance.now();
  const count = run(seconds * 1000);
  return count / ((performance.now() - started) / 1000);
}

function printTable(rows: Array<[string, Measured | null]>) {
  const header = [
    "benchmark",
    "req/s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "server CPU µs/req",
    "event loop µs/req",
    "client CPU µs/req",
    "requests",
    "errors",
  ];
  const measured = rows.filter((row): row is [string, Measured] => row[1] !== null);
  const lines = measured.map(([name, r]) => [
    name,
    r.perSecond.toFixed(0),
    r.p50Ms.toFixed(2),
    r.p90Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    r.serverCpuUsPerRequest.toFixed(0),
    r.serverMainThreadUsPerRequest.toFixed(0),
    r.clientCpuUsPerRequest.toFixed(0),
    String(r.requests),
    String(r.errors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  for (const [name, r] of measured) {
    if (r.budget === undefined) continue;
    console.log(`\nevent loop per request of ${name}, by part (sampled profile of a second run):`);
    for (const { part, share, microseconds } of r.budget) {
      console.log(
        `  ${microseconds.toFixed(0).padStart(5)} µs  ${(share * 100).toFixed(1).padStart(5)} %  ${part}`,
      );
    }
  }
}

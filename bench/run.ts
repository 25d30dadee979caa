/**
 * `pnpm bench`: every benchmark next to a baseline measured in the same run, as rates and ratios.
 *
 * 1. Authenticated GetCertificateAuthority (Connect JSON over HTTP/2: bearer check, session
 *    lookup, rate limiter, validation, workspace access, storage read) against a bare Hono route
 *    (`GET /healthz`) on the same server, through the same HTTP/2 client.
 * 2. SignSSHCertificate end to end (the same path, plus key parsing, an Ed25519 signature, and the
 *    ledger entry and audit event committed to the SQLite file before the answer) against raw
 *    `crypto.sign` Ed25519 over a certificate-sized message, measured in the same process.
 *
 * The load generator runs in a child process, so the server keeps one of the two cores.
 *
 * Settings: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (default 32), BENCH_ONLY (comma-separated
 * subset of `healthz,get-ca,sign,raw`, e.g. to profile one request path alone), BENCH_LOG_LEVEL
 * (default silent; `info` logs every request to stderr as the server does by default: run with
 * `2>/dev/null` or a file to see its cost).
 */
import { generateKeyPairSync, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlatformClient } from "@wap/client";
import { CertificateKeyType } from "@wap/core/api";
import { createJsonLogger, createServer, silentLogger } from "@wap/server";
import { type LoadResult, type RequestSpec, runLoadInChild } from "./http2-load.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const only = new Set((process.env.BENCH_ONLY ?? "healthz,get-ca,sign,raw").split(",").map((s) => s.trim()));

const dataDir = await mkdtemp(join(tmpdir(), "wap-bench-"));
const server = await createServer({
  port: 0,
  dataDir,
  logger: process.env.BENCH_LOG_LEVEL
    ? createJsonLogger(process.env.BENCH_LOG_LEVEL as Parameters<typeof createJsonLogger>[0])
    : silentLogger,
  // The benchmark measures request handling, not the limiter's refusals.
  rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
});

try {
  const client = createPlatformClient({ baseUrl: server.url });
  await client.auth.register({
    name: "Bench Mark",
    email: "bench@example.com",
    username: "bench",
    password: "benchmark password",
  });
  const { accessToken } = await client.login("bench@example.com", "benchmark password");
  const { workspace } = await client.workspaces.createWorkspace({ name: "bench" });
  const { certificateAuthority } = await client.certificates.createCertificateAuthority({
    workspaceId: workspace!.id,
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
    body: JSON.stringify({ workspaceId: workspace!.id, id: certificateAuthority!.id }),
  };
  const healthz: RequestSpec = { method: "GET", path: "/healthz" };
  const signSsh: RequestSpec = {
    method: "POST",
    path: "/platform.v1.CertificateService/SignSSHCertificate",
    headers: getCa.headers,
    body: JSON.stringify({
      workspaceId: workspace!.id,
      caId: certificateAuthority!.id,
      type: "CERTIFICATE_TYPE_USER",
      publicKey: ed25519PublicKeyLine("bench@platform"),
    }),
  };

  const skipped = {
    requests: 0,
    errors: 0,
    seconds: 0,
    perSecond: 0,
    p50Ms: 0,
    p99Ms: 0,
    clientCpuUsPerRequest: 0,
  };
  const measure = async (name: string, spec: RequestSpec) => {
    if (!only.has(name)) return { ...skipped, serverCpuUsPerRequest: 0, serverMainThreadUsPerRequest: 0 };
    await runLoadInChild(server.url, spec, { seconds: 1, concurrency }); // warm-up: JIT, caches, connections
    const cpuBefore = process.cpuUsage();
    const mainBefore = mainThreadCpuUs();
    const result = await runLoadInChild(server.url, spec, { seconds, concurrency });
    const cpu = process.cpuUsage(cpuBefore);
    const main = mainThreadCpuUs() - mainBefore;
    const requests = Math.max(1, result.requests);
    return {
      ...result,
      serverCpuUsPerRequest: (cpu.user + cpu.system) / requests,
      serverMainThreadUsPerRequest: main / requests,
    };
  };
  const baseline = await measure("healthz", healthz);
  const subject = await measure("get-ca", getCa);
  const storage = server.platform.services.storage;
  const ledgerBefore = (await storage.issuedCertificates.list(workspace!.id, { limit: 1, offset: 0 })).total;
  const signing = await measure("sign", signSsh);
  const ledgerAfter = (await storage.issuedCertificates.list(workspace!.id, { limit: 1, offset: 0 })).total;
  const audited = await storage.auditEvents.list(workspace!.id, {
    limit: 1,
    offset: 0,
    action: "certificate.sign_ssh_user",
  });
  const rawSign = only.has("raw") ? measureRawEd25519(seconds) : 0;

  console.log(
    `\nHTTP/2, ${concurrency} concurrent requests on one connection, ${seconds}s each (Node ${process.version})\n`,
  );
  printTable([
    ["bare Hono route GET /healthz (baseline)", baseline],
    ["authenticated GetCertificateAuthority (Connect JSON)", subject],
  ]);
  console.log(
    `\nratio GetCertificateAuthority / baseline: ${(subject.perSecond / baseline.perSecond).toFixed(3)}`,
  );

  console.log("\nSSH certificates per second (Ed25519 CA, Ed25519 user key)\n");
  printTable([["SignSSHCertificate end to end (Connect JSON, ledger + audit committed)", signing]]);
  console.log(`raw crypto.sign Ed25519 (one core, same process): ${rawSign.toFixed(0)} signatures/s`);
  console.log(`ratio SignSSHCertificate / raw Ed25519 signing: ${(signing.perSecond / rawSign).toFixed(3)}`);
  // Warm-up requests are signed too: every answered request must have its ledger and audit rows.
  console.log(
    `ledger entries written in the run: ${ledgerAfter - ledgerBefore}; audit events of issuance in total: ${audited.total}`,
  );
  const failed = subject.errors + baseline.errors + signing.errors;
  if (failed > 0) {
    console.error(`\n${failed} requests failed: the figures above are not valid`);
    process.exitCode = 1;
  }
  if (ledgerAfter - ledgerBefore < signing.requests || audited.total !== ledgerAfter) {
    console.error("\nsome certificates were answered without their ledger entry or audit event");
    process.exitCode = 1;
  }
} finally {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
}

/**
 * CPU time of this process's main thread (the event loop) in µs, from /proc on Linux (0
 * elsewhere). Unlike `process.cpuUsage`, it leaves out the GC and libuv helper threads: the
 * event loop's share bounds the request rate, at most 1e6 / (main-thread µs per request).
 */
function mainThreadCpuUs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1e6) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/** An OpenSSH authorized_keys line for a fresh Ed25519 key. */
function ed25519PublicKeyLine(comment: string): string {
  const spki = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" });
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const blob = Buffer.concat([field(Buffer.from("ssh-ed25519")), field(spki.subarray(spki.length - 32))]);
  return `ssh-ed25519 ${blob.toString("base64")} ${comment}`;
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

function printTable(
  rows: Array<[string, LoadResult & { serverCpuUsPerRequest: number; serverMainThreadUsPerRequest: number }]>,
) {
  const header = [
    "benchmark",
    "req/s",
    "p50 ms",
    "p99 ms",
    "server CPU µs/req",
    "event loop µs/req",
    "client CPU µs/req",
    "requests",
    "errors",
  ];
  const lines = rows.map(([name, r]) => [
    name,
    r.perSecond.toFixed(0),
    r.p50Ms.toFixed(2),
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
}

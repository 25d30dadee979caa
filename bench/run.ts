/**
 * `pnpm bench`: every benchmark next to a baseline measured in the same run, as rates and ratios.
 *
 * 1. Authenticated GetCertificateAuthority (Connect JSON over HTTP/2: bearer check, session
 *    lookup, rate limiter, validation, workspace access, storage read) against a bare Hono route
 *    (`GET /healthz`) on the same server, through the same HTTP/2 client.
 *
 * The load generator runs in a child process, so the server keeps one of the two cores.
 *
 * Settings: BENCH_SECONDS (default 5), BENCH_CONCURRENCY (default 32).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlatformClient } from "@wap/client";
import { CertificateKeyType } from "@wap/core/api";
import { createServer, silentLogger } from "@wap/server";
import { type LoadResult, type RequestSpec, runLoadInChild } from "./http2-load.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);

const dataDir = await mkdtemp(join(tmpdir(), "wap-bench-"));
const server = await createServer({
  port: 0,
  dataDir,
  logger: silentLogger,
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

  const measure = async (spec: RequestSpec) => {
    await runLoadInChild(server.url, spec, { seconds: 1, concurrency }); // warm-up: JIT, caches, connections
    const cpuBefore = process.cpuUsage();
    const result = await runLoadInChild(server.url, spec, { seconds, concurrency });
    const cpu = process.cpuUsage(cpuBefore);
    return { ...result, serverCpuUsPerRequest: (cpu.user + cpu.system) / result.requests };
  };
  const baseline = await measure(healthz);
  const subject = await measure(getCa);

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
  if (subject.errors + baseline.errors > 0) {
    console.error(`\n${subject.errors + baseline.errors} requests failed: the figures above are not valid`);
    process.exitCode = 1;
  }
} finally {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
}

function printTable(rows: Array<[string, LoadResult & { serverCpuUsPerRequest: number }]>) {
  const header = ["benchmark", "req/s", "p50 ms", "p99 ms", "server CPU µs/req", "requests", "errors"];
  const lines = rows.map(([name, r]) => [
    name,
    r.perSecond.toFixed(0),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    r.serverCpuUsPerRequest.toFixed(0),
    String(r.requests),
    String(r.errors),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(format(header));
  for (const line of lines) console.log(format(line));
}

/**
 * `pnpm bench`: every benchmark next to a baseline measured in the same run, as rates and ratios,
 * printed as it goes and written to bench/REPORT.md with a plot, bench/report.svg.
 *
 * 1. The request path (request-path.ts): authenticated GetCertificateAuthority against a bare
 *    route, and SignSSHCertificate end to end against raw Ed25519 signing.
 * 2. The audit export of 1,000,000 events (audit-export.ts) against a bare scan and a naive
 *    export.
 * 3. Daemon control streams (daemon-streams.ts): memory and heartbeat round trips of 10,000
 *    open streams, against bare HTTP/2 connections and PINGs.
 * 4. The host agent (agent.ts): `wap-agent run`'s memory idle and with 50 web terminals, and the
 *    time from a grant change to its principals file on disk.
 * 5. Certificate lifecycle (certificate-lifecycle.ts): KRL generation for 100,000 revoked serials,
 *    and filtered ListIssuedCertificates pages over a ledger of 1,000,000 entries.
 * 6. Worker processes (workers.ts): authenticated GetCertificateAuthority against the binary with
 *    one worker and with two, over PostgreSQL (BENCH_DATABASE_URL; needs h2load).
 * 7. `wap ssh` end to end (wap-ssh.ts): `wap ssh <target> -- true` against a local sshd with a
 *    cached certificate and with one issued, against plain `ssh`; the CLI's start-up against
 *    `node -e 0`.
 * 8. Webhook delivery (webhooks.ts): audit events delivered in order to one receiver on loopback,
 *    against the same bodies POSTed by node:http alone.
 * 9. SSH certificate issuance as deployed (issuance.ts): `wap-server` started as `pnpm start`
 *    starts it, over TLS 1.3 with info request logs and the durable SQLite, against step-ca
 *    (step-ca.ts) driven by the same load generator.
 *
 * Benchmarks are chosen by name on the command line (`pnpm bench ledger`, `pnpm bench sign raw`)
 * or by BENCH_ONLY; none named means all. `ledger` is the certificate lifecycle's name too.
 *
 * Settings:
 * - BENCH_SECONDS (default 5) and BENCH_CONCURRENCY (default 32): each load run of the request
 *   path;
 * - BENCH_ONLY (comma-separated subset of `healthz,get-ca,sign,raw,audit-export,daemon-streams,agent,ssh-wrapper,certificate-lifecycle,workers,wap-ssh,webhooks,issuance`,
 *   default all), e.g. to profile one request path alone;
 * - BENCH_AUDIT_ROWS (default 1,000,000): events in the exported window;
 * - BENCH_LEDGER_ROWS (default 1,000,000), BENCH_KRL_SERIALS (default 100,000) and
 *   BENCH_LEDGER_PAGES (default 300): the certificate lifecycle's ledger, revocations and pages;
 * - BENCH_DAEMON_STREAMS (default 10,000): daemon control streams held open; BENCH_DAEMON_LOADERS
 *   and BENCH_HEARTBEAT_RATE as daemon-streams.ts says;
 * - BENCH_LOAD (`h2load` or `node`; default h2load when installed): the load generator of the
 *   request path (request-path.ts);
 * - BENCH_PROFILE (default `1`): `0` skips the profiled second run of GetCertificateAuthority and
 *   SignSSHCertificate that splits their event loop time per request by part (call-budget.ts);
 * - BENCH_WAP_SSH_RUNS (default 100): runs of each `wap ssh` series;
 * - BENCH_WEBHOOK_EVENTS (default 10,000): events delivered by the webhook benchmark;
 * - BENCH_LOG_LEVEL (default silent; `info` logs every request to stderr as the server does by
 *   default: run with `2>/dev/null` or a file to see its cost);
 * - BENCH_PEER (default `1`): `0` leaves step-ca out of the issuance benchmark;
 * - BENCH_BASELINE_ROOT (default none): another checkout of the repository (with node_modules)
 *   whose server the issuance benchmark measures first, as "before" next to this one;
 * - BENCH_REPORT (default `1`): `0` prints the figures without writing REPORT.md and report.svg.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { runAgentBench } from "./agent.js";
import { runAuditExportBench } from "./audit-export.js";
import { runCertificateLifecycleBench } from "./certificate-lifecycle.js";
import { runDaemonStreamsBench } from "./daemon-streams.js";
import { runIssuanceBench } from "./issuance.js";
import {
  type BenchReport,
  describeCommit,
  describeMachine,
  sampleLoad,
  sectionText,
  writeReport,
} from "./report.js";
import { requestPathMeasures, runRequestPathBench } from "./request-path.js";
import type { BenchSection } from "./results.js";
import { runSshWrapperBench } from "./ssh-wrapper.js";
import { runWapSshBench } from "./wap-ssh.js";
import { runWebhooksBench } from "./webhooks.js";
import { runWorkersBench } from "./workers.js";

const benchmarks = [
  ...requestPathMeasures,
  "audit-export",
  "daemon-streams",
  "agent",
  "ssh-wrapper",
  "certificate-lifecycle",
  "workers",
  "wap-ssh",
  "webhooks",
  "issuance",
] as const;

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Other names a benchmark answers to on the command line and in BENCH_ONLY. */
const aliases: Readonly<Record<string, (typeof benchmarks)[number]>> = { ledger: "certificate-lifecycle" };
const named = process.argv.slice(2).filter((arg) => arg !== "--");
const only = new Set(
  (named.length > 0 ? named : (process.env.BENCH_ONLY ?? benchmarks.join(",")).split(","))
    .map((s) => s.trim())
    .map((s) => aliases[s] ?? s),
);
const unknown = [...only].filter((name) => !(benchmarks as readonly string[]).includes(name));
if (unknown.length > 0) {
  console.error(
    `unknown benchmarks (${unknown.join(", ")}); known: ${[...benchmarks, ...Object.keys(aliases)].join(", ")}`,
  );
  process.exit(2);
}

const here = dirname(fileURLToPath(import.meta.url));
const loadAtStart = sampleLoad();
const sections: BenchSection[] = [];

if (requestPathMeasures.some((m) => only.has(m))) {
  sections.push(
    ...(await runRequestPathBench({
      seconds,
      concurrency,
      only,
      ...(process.env.BENCH_LOG_LEVEL ? { logLevel: process.env.BENCH_LOG_LEVEL } : {}),
      ...(process.env.BENCH_LOAD ? { load: process.env.BENCH_LOAD } : {}),
      profile: process.env.BENCH_PROFILE !== "0",
    })),
  );
}
if (only.has("audit-export")) {
  console.log("\nAudit export");
  sections.push(await runAuditExportBench());
}
if (only.has("daemon-streams")) {
  console.log("\nDaemon control streams");
  sections.push(await runDaemonStreamsBench());
}
if (only.has("agent")) {
  console.log("\nHost agent");
  sections.push(await runAgentBench());
}
if (only.has("ssh-wrapper")) {
  console.log("\nSSH session wrapper");
  sections.push(await runSshWrapperBench());
}
if (only.has("certificate-lifecycle")) {
  console.log("\nCertificate lifecycle");
  sections.push(await runCertificateLifecycleBench());
}

if (only.has("workers")) {
  console.log("\nWorker processes over PostgreSQL");
  sections.push(await runWorkersBench({ seconds, concurrency }));
}

if (only.has("wap-ssh")) {
  console.log("\nwap ssh end to end");
  sections.push(await runWapSshBench());
}

if (only.has("webhooks")) {
  console.log("\nWebhook delivery");
  sections.push(await runWebhooksBench());
}

if (only.has("issuance")) {
  console.log("\nSSH certificate issuance as deployed, against step-ca");
  sections.push(
    await runIssuanceBench({
      seconds,
      concurrency,
      peer: process.env.BENCH_PEER !== "0",
      ...(process.env.BENCH_BASELINE_ROOT && { baselineRoot: process.env.BENCH_BASELINE_ROOT }),
      profile: process.env.BENCH_PROFILE !== "0",
    }),
  );
}

for (const section of sections) console.log(sectionText(section));

if (process.env.BENCH_REPORT !== "0") {
  const settings = Object.fromEntries(
    Object.entries(process.env)
      .filter(([key, value]) => key.startsWith("BENCH_") && value !== undefined)
      .sort(([a], [b]) => a.localeCompare(b)),
  ) as Record<string, string>;
  const report: BenchReport = {
    date: new Date().toISOString(),
    machine: describeMachine(),
    commit: describeCommit(here),
    load: { start: loadAtStart, end: sampleLoad() },
    settings,
    sections,
    skipped: benchmarks.some((name) => !only.has(name))
      ? [`Not run (not chosen): ${benchmarks.filter((name) => !only.has(name)).join(", ")}.`]
      : [],
  };
  const written = await writeReport(report, here);
  console.log(`\nwrote ${written.markdown} and ${written.svg}`);
}

/**
 * ExportAuditLogs at scale: a workspace with BENCH_AUDIT_ROWS audit events (default 1,000,000)
 * in a SQLite file, exported as CSV and JSON by the core export (keyset pages serialised into
 * one growing buffer), next to two baselines measured in the same run:
 *
 * - `idle`: the process with the storage open and nothing read (the fixed part of the RSS);
 * - `select`: the same keyset scan with no serialisation (how fast storage hands out rows);
 * - `stringify`: the naive export, every row loaded into an array of EventLog objects and
 *   `JSON.stringify` once (the same content as the JSON export).
 *
 * Each phase runs in its own process, so its peak RSS (`maxRSS`) is its own.
 *
 * Targets (the export's design, docs/sso-billing-audit.md): memory about the file plus one page,
 * held as peak RSS above the idle process at most {@link memoryTargetRatio} times the file; and
 * the largest export (1,000,000 events) answered within 20 s, so at least
 * {@link rowsPerSecondTarget} rows/s.
 *
 *   node --conditions=dev-source --import tsx bench/audit-export.ts
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultAuditExportOptions, exportAuditLog } from "@wap/core/internal";
import type { AuditEventRecord, Storage } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import type { BenchComparison, BenchFigure, BenchSection, BenchTarget } from "./results.js";

/** Peak RSS above the idle process, as a multiple of the export file, at most. */
export const memoryTargetRatio = 1.5;
/** Export rows per second, at least. */
export const rowsPerSecondTarget = 50_000;

const workspaceId = "00000000-0000-4000-8000-000000000001";
/** The export's own page size: the baselines scan as it does. */
const pageSize = defaultAuditExportOptions.pageSize;

interface PhaseResult {
  readonly phase: string;
  readonly rows: number;
  readonly ms: number;
  readonly bytes: number;
  readonly maxRssMiB: number;
}

const actions = [
  "target.create",
  "certificate.sign_ssh",
  "member.update",
  "daemon.sync",
  "service_account.create",
];
const agents = [
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
  "wap-cli/1.4.2 (linux; amd64)",
  "connect-es/2.1.2",
];

async function seed(storage: Storage, rows: number): Promise<void> {
  const now = new Date("2026-01-01T00:00:00Z");
  await storage.users.insert({
    id: workspaceId,
    name: "Bench Owner",
    username: "bench",
    email: "bench@example.com",
    emailVerified: true,
    picture: "",
    passwordHash: null,
    enableEmailRecovery: false,
    createdAt: now,
    updatedAt: now,
  });
  await storage.workspaces.insert({
    id: workspaceId,
    name: "bench",
    description: "",
    createdBy: workspaceId,
    enrollAutoApprove: false,
    enrollExpiresAt: null,
    inviteExpiresAt: null,
    createdAt: now,
    updatedAt: now,
  });
  const actors = Array.from({ length: 50 }, () => randomUUID());
  const batch = 10_000;
  for (let start = 0; start < rows; start += batch) {
    await storage.transaction(async (tx) => {
      for (let i = start; i < Math.min(rows, start + batch); i++) {
        const event: AuditEventRecord = {
          id: randomUUID(),
          workspaceId,
          actorId: actors[i % actors.length]!,
          actorType: i % 7 === 0 ? "service_account" : "user",
          action: actions[i % actions.length]!,
          resource: `target:${randomUUID()}`,
          ipAddress: `192.0.2.${i % 250}`,
          userAgent: agents[i % agents.length]!,
          statusCode: "ok",
          requestId: randomUUID(),
          // About 30 events a minute over the year.
          timestamp: new Date(now.getTime() + i * 2000),
        };
        await tx.auditEvents.append(event);
      }
    });
  }
}

/** Runs one phase against the seeded file; returns what it measured. */
async function runPhase(phase: string, filename: string): Promise<PhaseResult> {
  const storage = await createSqliteStorage({ filename });
  try {
    const started = performance.now();
    let count = 0;
    let bytes = 0;
    if (phase === "idle") {
      // Nothing: what the process weighs before it reads a row.
    } else if (phase === "select") {
      let after: string | undefined;
      for (;;) {
        const page = await storage.auditEvents.scan(workspaceId, {
          limit: pageSize,
          ...(after ? { after } : {}),
        });
        count += page.items.length;
        if (page.next === null) break;
        after = page.next;
      }
    } else if (phase === "stringify") {
      const all: Record<string, string>[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await storage.auditEvents.scan(workspaceId, {
          limit: pageSize,
          ...(after ? { after } : {}),
        });
        for (const e of page.items) {
          all.push({
            id: e.id,
            workspaceId: e.workspaceId ?? "",
            actorId: e.actorId,
            actorType: e.actorType,
            action: e.action,
            ipAddress: e.ipAddress,
            userAgent: e.userAgent,
            statusCode: e.statusCode,
            timestamp: e.timestamp.toISOString(),
          });
        }
        if (page.next === null) break;
        after = page.next;
      }
      const text = JSON.stringify(all);
      count = all.length;
      bytes = Buffer.byteLength(text);
    } else {
      const result = await exportAuditLog(storage, workspaceId, {}, phase === "csv" ? "csv" : "json", {
        maxRows: Number.MAX_SAFE_INTEGER,
        maxBytes: 2 ** 31 - 1,
      });
      count = result.rows;
      bytes = result.data.byteLength;
    }
    const ms = performance.now() - started;
    return { phase, rows: count, ms, bytes, maxRssMiB: process.resourceUsage().maxRSS / 1024 };
  } finally {
    await storage.close();
  }
}

const self = fileURLToPath(import.meta.url);

/** Seeds `rows` events in a fresh file, runs every phase in its own process, returns the section. */
export async function runAuditExportBench(options: { rows?: number } = {}): Promise<BenchSection> {
  const rows = options.rows ?? Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), "wap-audit-bench-"));
  const filename = join(dir, "audit.db");
  try {
    const seeding = performance.now();
    const storage = await createSqliteStorage({ filename });
    await seed(storage, rows);
    await storage.close();
    const seedSeconds = (performance.now() - seeding) / 1000;
    console.log(`seeded ${rows.toLocaleString("en")} audit events in ${seedSeconds.toFixed(1)} s`);

    const results: PhaseResult[] = [];
    for (const phase of ["idle", "select", "csv", "json", "stringify"]) {
      const child = spawnSync(process.execPath, [...process.execArgv, self, "--phase", phase, filename], {
        encoding: "utf8",
        maxBuffer: 1024 * 1024,
      });
      if (child.status !== 0) throw new Error(`phase ${phase} failed: ${child.stderr}`);
      results.push(JSON.parse(child.stdout.trim().split("\n").pop()!) as PhaseResult);
    }
    printPhases(results);
    return auditExportSection(rows, seedSeconds, results);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function printPhases(results: readonly PhaseResult[]): void {
  const select = results.find((r) => r.phase === "select")!;
  console.log("");
  console.log("phase      rows/s      output MiB  peak RSS MiB  vs select");
  for (const r of results) {
    if (r.phase === "idle") {
      console.log(
        `${"idle".padEnd(10)} ${"-".padStart(10)}  ${"-".padStart(10)}  ${r.maxRssMiB.toFixed(0).padStart(12)}`,
      );
      continue;
    }
    const rate = r.rows / (r.ms / 1000);
    console.log(
      `${r.phase.padEnd(10)} ${Math.round(rate).toLocaleString("en").padStart(10)}  ${(r.bytes / 2 ** 20)
        .toFixed(1)
        .padStart(
          10,
        )}  ${r.maxRssMiB.toFixed(0).padStart(12)}  ${(select.ms / r.ms).toFixed(2).padStart(8)}x`,
    );
  }
}

const round = (value: number, digits = 0) => Number(value.toFixed(digits));

const phaseNames: Record<string, string> = {
  select: "keyset scan, no output (baseline)",
  csv: "CSV export",
  json: "JSON export",
  stringify: "naive JSON.stringify of every row (baseline)",
};

function auditExportSection(
  rows: number,
  seedSeconds: number,
  results: readonly PhaseResult[],
): BenchSection {
  const byPhase = new Map(results.map((r) => [r.phase, r]));
  const idle = byPhase.get("idle")!;
  const rate = (r: PhaseResult) => r.rows / Math.max(r.ms / 1000, 1e-9);
  const figure = (phase: string, what: "rate" | "rss" | "size"): BenchFigure => {
    const r = byPhase.get(phase)!;
    const name = phaseNames[phase] ?? phase;
    if (what === "rate") return { label: `${name}: throughput`, value: round(rate(r)), unit: "rows/s" };
    if (what === "size") return { label: `${name}: output`, value: round(r.bytes / 2 ** 20, 1), unit: "MiB" };
    return { label: `${name}: peak RSS`, value: round(r.maxRssMiB), unit: "MiB" };
  };
  const exported = ["csv", "json"] as const;
  const figures: BenchFigure[] = [
    { label: "events in the window", value: rows, unit: "events" },
    { label: "seeding (10,000 per transaction)", value: round(seedSeconds, 1), unit: "s" },
    {
      label: "idle process (storage open, nothing read): peak RSS",
      value: round(idle.maxRssMiB),
      unit: "MiB",
    },
    ...["select", "csv", "json", "stringify"].flatMap((phase) => [
      figure(phase, "rate"),
      ...(phase === "select" ? [] : [figure(phase, "size")]),
      figure(phase, "rss"),
    ]),
  ];
  const compare = (subject: BenchFigure, baseline: BenchFigure): BenchComparison => ({
    subject,
    baseline,
    ratio: round(subject.value / Math.max(baseline.value, 1e-9), 3),
  });
  const comparisons: BenchComparison[] = [
    ...exported.map((phase) => compare(figure(phase, "rate"), figure("select", "rate"))),
    compare(figure("json", "rate"), figure("stringify", "rate")),
    compare(figure("json", "rss"), figure("stringify", "rss")),
  ];
  /** Peak RSS above the idle process per MiB of the file the phase made. */
  const memoryPerOutput = (phase: string): BenchFigure => {
    const r = byPhase.get(phase)!;
    const aboveIdle = r.maxRssMiB - idle.maxRssMiB;
    return {
      label: `${phaseNames[phase]}: peak RSS above idle / output size`,
      value: round(aboveIdle / Math.max(r.bytes / 2 ** 20, 1e-9), 2),
      unit: "×",
    };
  };
  figures.push(...exported.map(memoryPerOutput));
  const targets: BenchTarget[] = exported.flatMap((phase) => {
    const memory = memoryPerOutput(phase);
    return [
      {
        figure: `${phaseNames[phase]}: throughput`,
        comparison: ">=",
        value: rowsPerSecondTarget,
        unit: "rows/s",
        met: rate(byPhase.get(phase)!) >= rowsPerSecondTarget,
      },
      {
        figure: memory.label,
        comparison: "<=",
        value: memoryTargetRatio,
        unit: "×",
        met: memory.value <= memoryTargetRatio,
      },
    ] satisfies BenchTarget[];
  });
  return {
    title: `Audit export (${rows.toLocaleString("en")} events)`,
    method: `ExportAuditLogs' core export of one workspace's events from a SQLite file, as CSV and as JSON (keyset pages of ${pageSize.toLocaleString("en")} serialised a few dozen rows at a time into one growing buffer), each phase in a process of its own so that its peak RSS (maxRSS) is its own. Baselines: the same keyset scan with no output, and the naive export (every row loaded, then one JSON.stringify).`,
    figures,
    comparisons,
    targets,
    series: [],
    notes: [
      `Targets: the export's design (docs/sso-billing-audit.md) holds memory to about the file plus one page, taken here as at most ${memoryTargetRatio}× the file above the idle process; and the largest export (1,000,000 events) answered within 20 s, at least ${rowsPerSecondTarget.toLocaleString("en")} rows/s.`,
      ...(rows === 1_000_000
        ? []
        : [`Run with BENCH_AUDIT_ROWS=${rows}: the targets are stated for 1,000,000 events.`]),
    ],
  };
}

if (process.argv[2] === "--phase") {
  const result = await runPhase(process.argv[3]!, process.argv[4]!);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else if (process.argv[1] !== undefined && resolve(process.argv[1]) === self) {
  const section = await runAuditExportBench();
  for (const target of section.targets) {
    console.log(
      `target ${target.figure} ${target.comparison} ${target.value} ${target.unit}: ${target.met ? "met" : "NOT met"}`,
    );
  }
}

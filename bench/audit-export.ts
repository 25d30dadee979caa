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
 *   node --conditions=dev-source --import tsx bench/audit-export.ts
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { exportAuditLog } from "@wap/core";
import type { AuditEventRecord, Storage } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";

const rows = Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000);
const workspaceId = "00000000-0000-4000-8000-000000000001";

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

async function seed(storage: Storage): Promise<void> {
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
        const page = await storage.auditLog.scan(workspaceId, { limit: 2000, ...(after ? { after } : {}) });
        count += page.items.length;
        if (page.next === null) break;
        after = page.next;
      }
    } else if (phase === "stringify") {
      const all: Record<string, string>[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await storage.auditLog.scan(workspaceId, { limit: 2000, ...(after ? { after } : {}) });
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

if (process.argv[2] === "--phase") {
  const result = await runPhase(process.argv[3]!, process.argv[4]!);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  const dir = mkdtempSync(join(tmpdir(), "wap-audit-bench-"));
  const filename = join(dir, "audit.db");
  try {
    const seeding = performance.now();
    const storage = await createSqliteStorage({ filename });
    await seed(storage);
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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Webhook delivery throughput: BENCH_WEBHOOK_EVENTS audit events (default 10,000) of one workspace
 * in a SQLite file, delivered by the platform's worker to one receiver on loopback (node:http,
 * answering 204), signed, in order, each acknowledged before the next, the cursor and the attempts
 * written per round. Next to it, measured in the same run against the same receiver:
 *
 * - `bare POST`: the same bodies POSTed one after another with node:http on a new connection each
 *   (as the outbound fetch connects), without signing, storage or bookkeeping: the ceiling a
 *   receiver in order allows.
 *
 * Target: at least {@link eventsPerMinuteTarget} events a minute to one receiver.
 *
 *   node --conditions=dev-source --import tsx bench/webhooks.ts
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createArgon2PasswordHasher,
  createMasterKeyStore,
  createPlatform,
  generateMasterKey,
  type Platform,
} from "@wap/core";
import type { AuditEventRecord } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import type { BenchSection } from "./results.js";

/** Events a minute to one receiver, at least. */
export const eventsPerMinuteTarget = 10_000;

const workspaceId = "00000000-0000-4000-8000-00000000feed";

async function startReceiver(onEvent: (body: string) => void) {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      onEvent(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { server, port: (server.address() as AddressInfo).port };
}

async function seed(platform: Platform, events: number): Promise<AuditEventRecord[]> {
  const storage = platform.services.storage;
  const now = new Date();
  await storage.users.insert({
    id: workspaceId,
    name: "Bench Owner",
    username: "bench-hooks",
    email: "bench-hooks@example.com",
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
  const rows: AuditEventRecord[] = [];
  for (let i = 0; i < events; i++) {
    rows.push({
      id: randomUUID(),
      workspaceId,
      actorId: workspaceId,
      actorType: "user",
      action: i % 2 === 0 ? "team.create" : "certificate.sign_ssh_user",
      resource: `team:${randomUUID()}`,
      ipAddress: "192.0.2.7",
      userAgent: "wap-cli/1.4.2 (linux; amd64)",
      statusCode: "ok",
      requestId: randomUUID(),
      timestamp: new Date(now.getTime() + i),
    });
  }
  for (let i = 0; i < rows.length; i += 1000) {
    await storage.transaction(async (tx) => {
      for (const row of rows.slice(i, i + 1000)) await tx.auditEvents.append(row);
    });
  }
  return rows;
}

/** The ceiling: the bodies POSTed in order, one connection each, nothing else. */
async function barePosts(port: number, bodies: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const body of bodies) {
    await new Promise<void>((done, fail) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/bare",
          agent: false,
          headers: { "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          res.on("end", done);
        },
      );
      req.on("error", fail);
      req.end(body);
    });
  }
  return performance.now() - started;
}

export async function runWebhooksBench(): Promise<BenchSection> {
  const events = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
  const dir = mkdtempSync(join(tmpdir(), "wap-bench-webhooks-"));
  let received = 0;
  let lastSequence = 0;
  let outOfOrder = 0;
  let reached: (() => void) | undefined;
  const receiver = await startReceiver((body) => {
    const sequence = (JSON.parse(body) as { data: { sequence?: number } }).data.sequence ?? 0;
    if (sequence === 0) return;
    if (sequence !== lastSequence + 1) outOfOrder++;
    lastSequence = Math.max(lastSequence, sequence);
    received++;
    if (lastSequence >= events) reached?.();
  });
  const platform = await createPlatform({
    storage: await createSqliteStorage({ filename: join(dir, "wap.db") }),
    keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
    passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
    webhooks: { allowNetworks: ["127.0.0.1"], allowHttp: true, pollMs: 20 },
  });
  try {
    const rows = await seed(platform, events);
    const bodies = rows.map((row, i) =>
      JSON.stringify({
        type: row.action,
        timestamp: row.timestamp.toISOString(),
        data: { sequence: 0, n: i, ...row },
      }),
    );
    const bareMs = await barePosts(receiver.port, bodies);

    // The endpoint from the chain's start: the worker delivers the whole backlog.
    const now = new Date();
    const endpointId = randomUUID();
    const storage = platform.services.storage;
    const done = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const started = performance.now();
    await storage.webhookEndpoints.insert(
      {
        id: endpointId,
        workspaceId,
        url: `http://127.0.0.1:${receiver.port}/hooks`,
        description: "bench",
        eventTypes: [],
        enabled: true,
        disabledReason: "",
        createdAt: now,
        updatedAt: now,
        cursor: 0,
        attempts: 0,
        nextAttemptAt: null,
        failingSince: null,
        lastError: "",
        lastSuccessAt: null,
      },
      {
        endpointId,
        workspaceId,
        version: 1,
        sealed: await platform.services.keyStore.seal(
          new Uint8Array(32).fill(7),
          `webhook-secret:${endpointId}:1`,
        ),
        createdAt: now,
        expiresAt: null,
      },
    );
    await done;
    const deliveredMs = performance.now() - started;
    const perMinute = (count: number, ms: number) => Math.round((count / ms) * 60_000);
    const subject = perMinute(events, deliveredMs);
    const baseline = perMinute(events, bareMs);
    console.log(
      `webhooks: ${events} events in ${(deliveredMs / 1000).toFixed(1)} s = ${subject.toLocaleString("en")}/min; ` +
        `bare POSTs ${baseline.toLocaleString("en")}/min; ratio ${(subject / baseline).toFixed(2)}; ` +
        `out of order ${outOfOrder}, received ${received}`,
    );
    return {
      title: "Webhook delivery",
      method:
        `${events.toLocaleString("en")} audit events of one workspace (SQLite file) delivered by the platform's worker ` +
        "to one receiver on loopback, signed and in order, each acknowledged before the next; baseline: the same " +
        "bodies POSTed in order by node:http alone, a new connection each, nothing signed or recorded.",
      figures: [
        { label: "delivered", value: subject, unit: "events/min" },
        { label: "out of order", value: outOfOrder, unit: "events" },
      ],
      comparisons: [
        {
          subject: { label: "webhook delivery", value: subject, unit: "events/min" },
          baseline: { label: "bare POSTs in order", value: baseline, unit: "events/min" },
          ratio: Number((subject / baseline).toFixed(2)),
        },
      ],
      targets: [
        {
          figure: "webhook delivery",
          comparison: ">=",
          value: eventsPerMinuteTarget,
          unit: "events/min",
          met: subject >= eventsPerMinuteTarget && outOfOrder === 0,
        },
      ],
      series: [],
      notes: [],
    };
  } finally {
    await platform.close();
    await new Promise<void>((done) => receiver.server.close(() => done()));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (resolve(process.argv[1] ?? "") === fileURLToPath(import.meta.url)) {
  await runWebhooksBench();
}

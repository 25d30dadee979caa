import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type {
  AuditEventRecord,
  IssuedCertificateRecord,
  UserRecord,
  WorkspaceRecord,
} from "@wap/core/storage";
import { createMigrations } from "@wap/storage-sql";
import { createSqliteStorage, SchemaVersionError } from "@wap/storage-sqlite";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-durability-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = () => join(dir, `${randomUUID()}.db`);

const user = (id = randomUUID()): UserRecord => ({
  id,
  name: "Grace Hopper",
  username: `grace-${id}`,
  email: `grace-${id}@example.com`,
  emailVerified: true,
  picture: "",
  passwordHash: null,
  enableEmailRecovery: false,
  createdAt: new Date(1_700_000_000_123),
  updatedAt: new Date(1_700_000_000_456),
});

/** The package as a child process imports it: from source, through tsx. */
const storageEntry = pathToFileURL(fileURLToPath(new URL("../src/index.ts", import.meta.url))).href;
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

interface ChildEnd {
  readonly stdout: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Runs `script` (an ES module body, with `env` added to the environment) in a child process that
 * has opened `filename` as `storage`; resolves with what it printed and how it ended.
 */
function runWithStorage(filename: string, script: string, env: Record<string, string>): Promise<ChildEnd> {
  const module = `
    const { createSqliteStorage } = await import(${JSON.stringify(storageEntry)});
    const storage = await createSqliteStorage({ filename: ${JSON.stringify(filename)} });
    ${script}`;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--conditions=dev-source", "--import", tsxLoader, "--input-type=module", "-e", module],
      { env: { ...process.env, ...env } },
      (_error, stdout) => resolve({ stdout, code: child.exitCode, signal: child.signalCode }),
    );
  });
}

describe("sqlite durability", () => {
  it("a write acknowledged before the process is killed (SIGKILL, no close) is there on reopen", async () => {
    const filename = file();
    // The child writes, reports, then dies without closing the database or checkpointing the WAL.
    const script = `
      const u = JSON.parse(process.env.WAP_USER, (k, v) => (k.endsWith("At") ? new Date(v) : v));
      await storage.transaction(async (tx) => { await tx.users.insert(u); });
      process.stdout.write("written\\n");
      process.kill(process.pid, "SIGKILL");
    `;
    const record = user();
    const { stdout, signal } = await runWithStorage(filename, script, { WAP_USER: JSON.stringify(record) });
    expect(stdout).toBe("written\n");
    expect(signal).toBe("SIGKILL");

    const reopened = await createSqliteStorage({ filename });
    try {
      expect(await reopened.users.findById(record.id)).toEqual(record);
    } finally {
      await reopened.close();
    }
  });

  it("units appended (group commit, writer thread) before the process is killed are there on reopen", async () => {
    const filename = file();
    const owner = user();
    const workspace: WorkspaceRecord = {
      id: randomUUID(),
      name: "Analytical Engines",
      description: "",
      createdBy: owner.id,
      enrollAutoApprove: false,
      enrollExpiresAt: null,
      inviteExpiresAt: null,
      createdAt: new Date(1_700_000_000_000),
      updatedAt: new Date(1_700_000_000_000),
    };
    const units = Array.from({ length: 20 }, (_, i) => {
      const certificate: IssuedCertificateRecord = {
        id: randomUUID(),
        workspaceId: workspace.id,
        caId: randomUUID(),
        caKeyVersion: 1,
        kind: "ssh_user",
        serial: String(1000 + i),
        keyFingerprint: "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
        principals: [owner.id],
        validAfter: new Date(1_700_000_000_000),
        validBefore: new Date(1_700_003_600_000),
        requesterType: "user",
        requesterId: owner.id,
        targetId: null,
        keyId: `wap:${workspace.id}:user:${owner.id}:${i}`,
        createdAt: new Date(1_700_000_000_000 + i),
      };
      const event: AuditEventRecord = {
        id: randomUUID(),
        workspaceId: workspace.id,
        actorId: owner.id,
        actorType: "user",
        action: "certificate.sign_ssh_user",
        resource: `issued_certificate:${certificate.id}`,
        ipAddress: "192.0.2.1",
        userAgent: "test",
        statusCode: "ok",
        requestId: randomUUID(),
        timestamp: new Date(1_700_000_000_000 + i),
      };
      return { issuedCertificates: [certificate], auditEvents: [event] };
    });
    // The child appends the units at once (they share commits), reports, then dies.
    const script = `
      const revive = (k, v) => (v !== null && /(At|validAfter|validBefore|timestamp)$/.test(k) ? new Date(v) : v);
      const { owner, workspace, units } = JSON.parse(process.env.WAP_FIXTURE, revive);
      await storage.users.insert(owner);
      await storage.workspaces.insert(workspace);
      await Promise.all(units.map((unit) => storage.append(unit)));
      process.stdout.write("appended\\n");
      process.kill(process.pid, "SIGKILL");
    `;
    const { stdout, signal } = await runWithStorage(filename, script, {
      WAP_FIXTURE: JSON.stringify({ owner, workspace, units }),
    });
    expect(stdout).toBe("appended\n");
    expect(signal).toBe("SIGKILL");

    const reopened = await createSqliteStorage({ filename });
    try {
      const ledger = await reopened.issuedCertificates.list(workspace.id, { limit: 100, offset: 0 });
      expect(ledger.total).toBe(units.length);
      const audit = await reopened.auditEvents.list(workspace.id, { limit: 100, offset: 0 });
      expect(audit.items.map((e) => e.id).sort()).toEqual(units.map((u) => u.auditEvents[0]!.id).sort());
    } finally {
      await reopened.close();
    }
  });

  it("a process that appends, then closes its storage, ends normally once the writer thread is done", async () => {
    const filename = file();
    // Nothing but the closing storage keeps the child alive: it must wait for the thread to end.
    const script = `
      await storage.append({ auditEvents: [JSON.parse(process.env.WAP_EVENT, (k, v) => (k === "timestamp" ? new Date(v) : v))] });
      await storage.close();
      process.stdout.write("closed\\n");
    `;
    const event: AuditEventRecord = {
      id: randomUUID(),
      workspaceId: null,
      actorId: randomUUID(),
      actorType: "user",
      action: "user.login",
      resource: "user:me",
      ipAddress: "192.0.2.1",
      userAgent: "test",
      statusCode: "ok",
      requestId: randomUUID(),
      timestamp: new Date(1_700_000_000_000),
    };
    const { stdout, code } = await runWithStorage(filename, script, { WAP_EVENT: JSON.stringify(event) });
    expect(stdout).toBe("closed\n");
    expect(code).toBe(0);
    const raw = new Database(filename, { readonly: true });
    try {
      expect(raw.prepare("select count(*) as n from audit_events where id = ?").get(event.id)).toEqual({
        n: 1,
      });
    } finally {
      raw.close();
    }
  });

  it("a second connection to the same file sees committed writes while the first stays open", async () => {
    const filename = file();
    const first = await createSqliteStorage({ filename });
    const second = await createSqliteStorage({ filename });
    try {
      const record = user();
      await first.users.insert(record);
      expect(await second.users.findById(record.id)).toEqual(record);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("opening a database whose schema is newer than the code fails with a clear error", async () => {
    const filename = file();
    await (await createSqliteStorage({ filename })).close();
    const raw = new Database(filename);
    raw
      .prepare("insert into wap_schema_migration (name, timestamp) values (?, ?)")
      .run("999_from_the_future", new Date().toISOString());
    raw.close();

    const error = await createSqliteStorage({ filename }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SchemaVersionError);
    const latest = Object.keys(createMigrations("sqlite")).sort().at(-1);
    expect((error as Error).message).toMatch(/newer than this version.*999_from_the_future/);
    expect((error as Error).message).toContain(`latest this version knows is ${latest}`);
  });
});

describe("sqlite configuration", () => {
  it("sets WAL, synchronous=FULL, foreign keys and a busy timeout; a lent database stays open", async () => {
    const database = new Database(file());
    const storage = await createSqliteStorage({ database });
    expect(storage.capabilities.multiInstance).toBe(false);
    expect(database.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(database.pragma("synchronous", { simple: true })).toBe(2); // FULL
    expect(database.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(database.pragma("busy_timeout", { simple: true })).toBe(5000);
    await storage.close();
    expect(database.open).toBe(true);
    expect(database.prepare("select count(*) as n from users").get()).toEqual({ n: 0 });
    database.close();
  });

  it("closing twice is harmless; calls after close fail", async () => {
    const storage = await createSqliteStorage({ filename: ":memory:" });
    await storage.close();
    await storage.close();
    await expect(storage.users.findById("x")).rejects.toThrow(/closed/);
  });
});

/**
 * The verifiable audit log end to end on SQLite: GetAuditSigningKey and ExportAuditChain (who may
 * call them), checkpoints checked by the real `openssl pkeyutl`, and `verifyChainFile` naming the
 * first bad entry of logs tampered with in the database directly and of exported files edited.
 */

import { createHash, createPrivateKey } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ExportAuditLogsRequest_Format, TeamService, UtilService } from "@wap/api";
import {
  type ChainFile,
  chainFileCheckpointMessage,
  findRecording,
  rawAuditPublicKey,
  readChainFile,
  verifyChainFile,
  writeChainFile,
} from "@wap/audit-chain";
import { createSqliteStorage } from "@wap/storage-sqlite";
import BetterSqlite3 from "better-sqlite3";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { signAuditCheckpoints } from "../src/audit/checkpoints.js";
import { createMasterKeyStore, generateMasterKey } from "../src/crypto/key-store.js";
import { resealSecrets } from "../src/platform/reseal-secrets.js";
import { startSessionRecording } from "../src/recordings/recorder.js";
import { memberWithRole, type Owner } from "./support/access.js";
import { run, scratch } from "./support/certificates.js";
import { insertAcceptedDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let database: BetterSqlite3.Database;
let files: Awaited<ReturnType<typeof scratch>>;
beforeAll(async () => {
  files = await scratch();
});
afterAll(() => files.remove());
beforeEach(async () => {
  database = new BetterSqlite3(":memory:");
  t = await createTestPlatform({
    storage: await createSqliteStorage({ database, strictTransactions: true }),
  });
  ada = await t.owner();
});
afterEach(async () => {
  await t.platform.close();
  database.close();
});

async function someTeams(n: number, owner: Owner = ada) {
  for (let i = 0; i < n; i++) {
    t.clock.advance(1000);
    await t.call(owner.caller, TeamService.method.createTeam, {
      workspaceId: owner.workspaceId,
      name: `team ${i} ${Math.random().toString(36).slice(2, 6)}`,
    });
  }
}

async function exportChain(
  format: "json" | "csv",
  window: { startDate?: Date; endDate?: Date } = {},
  owner: Owner = ada,
): Promise<string> {
  const { timestampFromDate } = await import("@bufbuild/protobuf/wkt");
  const res = await t.call(owner.caller, UtilService.method.exportAuditChain, {
    workspaceId: owner.workspaceId,
    format: format === "json" ? ExportAuditLogsRequest_Format.JSON : ExportAuditLogsRequest_Format.CSV,
    ...(window.startDate && { startDate: timestampFromDate(window.startDate) }),
    ...(window.endDate && { endDate: timestampFromDate(window.endDate) }),
  });
  return new TextDecoder().decode(res.data);
}

async function publicKey(owner: Owner = ada): Promise<Uint8Array> {
  const { publicKeyPem, algorithm } = await t.call(owner.caller, UtilService.method.getAuditSigningKey, {
    workspaceId: owner.workspaceId,
  });
  expect(algorithm).toBe("Ed25519");
  return rawAuditPublicKey(publicKeyPem)!;
}

const verify = async (text: string) => verifyChainFile(readChainFile(text), await publicKey());

describe("the audit signing key and the chain export", () => {
  it("only members who may read the audit log get the key or the export; other workspaces' are not found", async () => {
    const admin = await memberWithRole(t, ada.workspaceId, "admin");
    const editor = await memberWithRole(t, ada.workspaceId, "editor");
    const ws = { workspaceId: ada.workspaceId };
    const adaKey = await t.call(ada.caller, UtilService.method.getAuditSigningKey, ws);
    expect(adaKey.publicKeyPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    // One key per workspace, the same for every reader.
    expect((await t.call(admin.caller, UtilService.method.getAuditSigningKey, ws)).publicKeyPem).toBe(
      adaKey.publicKeyPem,
    );
    await t.call(admin.caller, UtilService.method.exportAuditChain, ws);
    await expectCode(t.call(editor.caller, UtilService.method.getAuditSigningKey, ws), "permission_denied");
    await expectCode(t.call(editor.caller, UtilService.method.exportAuditChain, ws), "permission_denied");
    const bob = await t.owner();
    await expectCode(t.call(bob.caller, UtilService.method.getAuditSigningKey, ws), "not_found");
    expect(
      (await t.call(bob.caller, UtilService.method.getAuditSigningKey, { workspaceId: bob.workspaceId }))
        .publicKeyPem,
    ).not.toBe(adaKey.publicKeyPem);
  });

  it("a master key rotation re-seals the audit key: the same public key, opened by the new master key", async () => {
    const before = await publicKey();
    const next = createMasterKeyStore({ masterKey: generateMasterKey() });
    const { resealed } = await resealSecrets(t.storage, t.platform.services.keyStore, next);
    expect(resealed.audit_key).toBe(1);
    const stored = (await t.storage.auditCheckpoints.findKey(ada.workspaceId))!;
    expect(stored.publicKey).toEqual(before);
    const der = await next.open(stored.sealedPrivateKey, `audit-key:${ada.workspaceId}`);
    expect(createPrivateKey({ key: Buffer.from(der), format: "der", type: "pkcs8" }).asymmetricKeyType).toBe(
      "ed25519",
    );
  });

  it("bad input is refused naming the field, and changes nothing", async () => {
    await expectCode(
      t.call(ada.caller, UtilService.method.exportAuditChain, { workspaceId: "not-a-uuid" }),
      "invalid_argument",
    );
    await expectCode(
      t.call(ada.caller, UtilService.method.exportAuditChain, {
        workspaceId: ada.workspaceId,
        format: 7 as ExportAuditLogsRequest_Format,
      }),
      "invalid_argument",
    );
    const head = await t.storage.auditEvents.chainHead(ada.workspaceId);
    expect(await t.storage.auditCheckpoints.latest(ada.workspaceId)).toBeNull();
    expect(await t.storage.auditEvents.chainHead(ada.workspaceId)).toEqual(head);
  });

  it("an export verifies in both formats; its checkpoint verifies with the plain openssl command", async () => {
    await someTeams(5);
    for (const format of ["json", "csv"] as const) {
      const text = await exportChain(format);
      const verdict = await verify(text);
      expect(verdict).toMatchObject({ ok: true });
      if (verdict.ok) expect(verdict.entries).toBeGreaterThanOrEqual(6);
    }
    // The documented command, on the last checkpoint of an export.
    const file = readChainFile(await exportChain("json"));
    const checkpoint = file.checkpoints.at(-1)!;
    const { publicKeyPem } = await t.call(ada.caller, UtilService.method.getAuditSigningKey, {
      workspaceId: ada.workspaceId,
    });
    const key = await files.file("audit-key.pem", publicKeyPem);
    const message = join(files.dir, "checkpoint.txt");
    const signature = join(files.dir, "checkpoint.sig");
    await writeFile(message, chainFileCheckpointMessage(file, checkpoint));
    await writeFile(signature, Buffer.from(checkpoint.signature, "base64"));
    const { stdout } = await run("openssl", [
      "pkeyutl",
      "-verify",
      "-pubin",
      "-inkey",
      key,
      "-rawin",
      "-in",
      message,
      "-sigfile",
      signature,
    ]);
    expect(stdout).toMatch(/Signature Verified Successfully/);
    // The message is the documented text.
    expect(new TextDecoder().decode(chainFileCheckpointMessage(file, checkpoint))).toBe(
      `wap-audit-checkpoint-v1\nworkspace: ${ada.workspaceId}\nposition: ${checkpoint.position}\nhash: ${checkpoint.hash}\nsigned-at: ${checkpoint.signedAt}\n`,
    );
    // The documented shell commands (docs/audit.md), with jq and openssl, on a JSON export.
    const doc = await readFile(new URL("../../../docs/audit.md", import.meta.url), "utf8");
    const script = /From a JSON export, with `jq`:\n\n```sh\n([\s\S]*?)```/
      .exec(doc)![1]!
      .replace(/^wap audit key.*\n/m, "");
    await writeFile(join(files.dir, "audit.json"), await exportChain("json"));
    await writeFile(join(files.dir, "audit-key.pem"), publicKeyPem);
    const shell = await run("sh", ["-euc", script], { cwd: files.dir });
    expect(shell.stdout).toMatch(/Signature Verified Successfully/);
    // One byte of the message changed: openssl refuses it.
    await writeFile(
      message,
      chainFileCheckpointMessage(file, { ...checkpoint, position: checkpoint.position + 1 }),
    );
    await expect(
      run("openssl", [
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        key,
        "-rawin",
        "-in",
        message,
        "-sigfile",
        signature,
      ]),
    ).rejects.toThrow(/Signature Verification Failure|exit code|Command failed/);
  });

  it("the interval signs each moved head once; a time window's export verifies on its own", async () => {
    await someTeams(3);
    expect(await signAuditCheckpoints(t.platform.services)).toBeGreaterThanOrEqual(1);
    expect(await signAuditCheckpoints(t.platform.services)).toBe(0);
    const middle = t.clock.now();
    await someTeams(4);
    const end = t.clock.now();
    await someTeams(2);
    const text = await exportChain("json", { startDate: middle, endDate: end });
    const file = readChainFile(text);
    expect(file.start.position).toBeGreaterThan(0);
    expect(file.entries.map((e) => e.action)).toEqual(Array(4).fill("team.create"));
    expect(await verify(text)).toMatchObject({ ok: true, entries: 4 });
    // A window without entries is an empty file that verifies, in both formats.
    const later = new Date(t.clock.now().getTime() + 86_400_000);
    for (const format of ["json", "csv"] as const) {
      expect(await verify(await exportChain(format, { startDate: later }))).toMatchObject({
        ok: true,
        entries: 0,
      });
    }
    // The stored checkpoint from the interval is in the full export with the export's own.
    const all = readChainFile(await exportChain("csv"));
    expect(all.checkpoints.length).toBeGreaterThanOrEqual(2);
    expect(await verify(writeChainFile(all, "json"))).toMatchObject({ ok: true });
  });
});

describe("verification names the first bad entry", () => {
  /** The workspace's entries as the database holds them. */
  const rows = () =>
    database
      .prepare(
        "select seq, chain_position as position, id from audit_events where workspace_id = ? order by chain_position",
      )
      .all(ada.workspaceId) as Array<{ seq: number; position: number; id: string }>;

  it("an entry edited in the database by one byte", async () => {
    await someTeams(6);
    const victim = rows()[3]!;
    database
      .prepare(
        "update audit_events set resource = substr(resource, 1, length(resource) - 1) || 'x' where seq = ?",
      )
      .run(victim.seq);
    expect(await verify(await exportChain("json"))).toMatchObject({
      ok: false,
      problem: "edited",
      position: victim.position,
      id: victim.id,
    });
  });

  it("an entry deleted in the database, in the middle or at the end", async () => {
    await someTeams(6);
    const victim = rows()[2]!;
    database.prepare("delete from audit_events where seq = ?").run(victim.seq);
    expect(await verify(await exportChain("csv"))).toMatchObject({
      ok: false,
      problem: "missing",
      position: victim.position,
    });
    const last = rows().at(-1)!;
    database.prepare("delete from audit_events where seq = ?").run(last.seq);
    database.prepare("delete from audit_events where seq = ?").run(rows()[1]!.seq);
    // Several gone: the first is named.
    expect(await verify(await exportChain("json"))).toMatchObject({
      ok: false,
      problem: "missing",
      position: 2,
    });
  });

  it("the last entry deleted in the database", async () => {
    await someTeams(3);
    const last = rows().at(-1)!;
    database.prepare("delete from audit_events where seq = ?").run(last.seq);
    expect(await verify(await exportChain("json"))).toMatchObject({
      ok: false,
      problem: "missing",
      position: last.position,
    });
  });

  it("an entry rewritten in the database with its hashes recomputed, after a checkpoint signed it", async () => {
    await someTeams(4);
    await signAuditCheckpoints(t.platform.services);
    const victim = rows()[2]!;
    const { chainHash, auditEntryContent } = await import("../src/audit/chain.js");
    // Rewrite the entry and every hash after it, and the head: only the checkpoint can tell.
    database.prepare("update audit_events set action = 'team.delete' where seq = ?").run(victim.seq);
    const chain = await t.storage.auditEvents.scanChain(ada.workspaceId, { from: 1, to: 1000, limit: 1000 });
    let previous = chain[victim.position - 2]!.hash;
    for (const entry of chain.slice(victim.position - 1)) {
      const hash = chainHash(previous, entry.position, auditEntryContent(entry));
      database
        .prepare("update audit_events set previous_hash = ?, hash = ? where id = ?")
        .run(Buffer.from(previous), Buffer.from(hash), entry.id);
      database
        .prepare("update audit_chain_heads set hash = ? where workspace_id = ?")
        .run(Buffer.from(hash), ada.workspaceId);
      previous = hash;
    }
    const verdict = await verify(await exportChain("json"));
    expect(verdict).toMatchObject({ ok: false, problem: "checkpoint_mismatch" });
    if (!verdict.ok) expect(verdict.position).toBeGreaterThanOrEqual(victim.position);
  });

  it("files edited: one byte of any entry, entries swapped, an entry removed, a checkpoint forged", async () => {
    await someTeams(5);
    const original = readChainFile(await exportChain("json"));
    const key = await publicKey();
    const n = original.entries.length;
    // Property: one byte of one field of one entry changed is named at that entry.
    const fields = [
      "id",
      "timestamp",
      "actorId",
      "action",
      "resource",
      "ipAddress",
      "userAgent",
      "requestId",
    ] as const;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: n - 1 }), fc.constantFrom(...fields), (index, field) => {
        const entries = original.entries.map((e, i) => {
          if (i !== index) return e;
          const value = e[field];
          const changed = value === "" ? "x" : `${value.slice(0, -1)}${value.endsWith("0") ? "1" : "0"}`;
          return { ...e, [field]: changed };
        });
        const verdict = verifyChainFile(readChainFile(writeChainFile({ ...original, entries }, "csv")), key);
        expect(verdict).toMatchObject({ ok: false, position: original.entries[index]!.position });
      }),
      { numRuns: 40 },
    );
    const swapped: ChainFile = {
      ...original,
      entries: [
        original.entries[0]!,
        original.entries[2]!,
        original.entries[1]!,
        ...original.entries.slice(3),
      ],
    };
    expect(verifyChainFile(swapped, key)).toMatchObject({
      ok: false,
      problem: "out_of_place",
      position: original.entries[1]!.position,
    });
    const removed: ChainFile = { ...original, entries: original.entries.filter((_, i) => i !== 3) };
    expect(verifyChainFile(removed, key)).toMatchObject({
      ok: false,
      problem: "missing",
      position: original.entries[3]!.position,
    });
    const cut: ChainFile = { ...original, entries: original.entries.slice(0, -1) };
    expect(verifyChainFile(cut, key)).toMatchObject({
      ok: false,
      problem: "missing",
      position: original.entries[n - 1]!.position,
    });
    const checkpoint = original.checkpoints.at(-1)!;
    // A checkpoint claiming a later head, or signed with another key.
    const forged: ChainFile = {
      ...original,
      checkpoints: [{ ...checkpoint, position: checkpoint.position + 1 }],
    };
    expect(verifyChainFile(forged, key)).toMatchObject({ ok: false, problem: "forged_checkpoint" });
    expect(verifyChainFile(original, new Uint8Array(32).fill(7))).toMatchObject({
      ok: false,
      problem: "forged_checkpoint",
    });
    const unsigned: ChainFile = { ...original, checkpoints: [] };
    expect(verifyChainFile(unsigned, key)).toMatchObject({ ok: false, problem: "unsigned" });
    expect(verifyChainFile(original, key)).toMatchObject({ ok: true });
  });
});

describe("session recordings in the chain", () => {
  it("a completed recording's SHA-256 is in the chain; a file edited by one byte matches nothing", async () => {
    const daemonId = await insertAcceptedDaemon(t, {
      workspaceId: ada.workspaceId,
      targetId: null,
      name: "host-rec",
      recordSessions: true,
    });
    const now = t.clock.now();
    const session = {
      id: crypto.randomUUID(),
      workspaceId: ada.workspaceId,
      daemonId,
      userId: ada.caller.userId,
      username: "deploy",
      state: "open" as const,
      createdAt: now,
      openedAt: now,
      closedAt: null,
      closeReason: "",
    };
    await t.storage.daemonSessions.insert(session);
    const recorder = (await startSessionRecording(t.platform.services, session, { width: 80, height: 24 }))!;
    recorder.output(new TextEncoder().encode("$ uptime\r\n up 3 days\r\n"));
    await recorder.close();
    const chunks = await t.storage.recordings.scanChunks(ada.workspaceId, session.id, { limit: 100 });
    const bytes = Buffer.concat(chunks.map((c) => c.data));
    const text = await exportChain("json");
    expect(await verify(text)).toMatchObject({ ok: true });
    const file = readChainFile(text);
    const sha = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
    const match = findRecording(file, sha(bytes));
    expect(match).toMatchObject({ recordingId: session.id });
    expect(file.entries.find((e) => e.position === match!.position)).toMatchObject({
      action: "recording.complete",
      actorId: ada.caller.userId,
      resource: `recording:${session.id} sha256=${sha(bytes)} bytes=${bytes.byteLength} truncated=false`,
    });
    const edited = Buffer.from(bytes);
    edited[edited.length - 3] = edited[edited.length - 3]! ^ 1;
    expect(findRecording(file, sha(edited))).toBeNull();
  });
});

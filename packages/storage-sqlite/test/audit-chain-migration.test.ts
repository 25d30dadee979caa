import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findChainBreak } from "@wap/core/internal";
import { genesisHash } from "@wap/core/storage";
import { migrationTableName } from "@wap/storage-sql";
import { createSqliteStorage } from "@wap/storage-sqlite";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "wap-sqlite-audit-chain-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("014_audit_chain on SQLite", () => {
  it("chains the entries logged before it, in the order they were appended, and new ones after them", async () => {
    const filename = join(dir, `${randomUUID()}.db`);
    await (await createSqliteStorage({ filename })).close();
    // A database from before the chain.
    const raw = new Database(filename);
    raw.exec(
      "drop table audit_chain_heads; drop table audit_checkpoints; drop table audit_signing_keys; drop index audit_events_chain_key",
    );
    for (const column of ["chain_position", "previous_hash", "hash"])
      raw.exec(`alter table audit_events drop column ${column}`);
    // And without what later migrations add (Kysely applies only a history without gaps).
    raw.exec("drop table webhook_deliveries; drop table webhook_secrets; drop table webhook_endpoints");
    raw.exec("drop table ssh_sessions; alter table daemons drop column require_recording");
    raw.exec("drop table access_requests; drop index principal_subjects_valid_until_idx");
    for (const column of ["grant_kind", "valid_until", "approval_policy", "limits"])
      raw.exec(`alter table principal_subjects drop column ${column}`);
    raw.exec(
      "alter table issued_certificates drop column limits; alter table issued_certificates drop column single_use; drop table ssh_step_up_certificates; drop table ssh_step_ups; alter table issued_certificates drop column step_up_id",
    );
    raw.prepare(`delete from ${migrationTableName} where name >= '014_audit_chain'`).run();
    const workspaces = [randomUUID(), randomUUID()];
    for (const ws of workspaces) {
      raw
        .prepare(
          "insert into workspaces (id, name, description, created_by, enroll_auto_approve, created_at, updated_at) values (?, ?, '', 'u', 0, 0, 0)",
        )
        .run(ws, `ws ${ws}`);
    }
    const insert = raw.prepare(
      "insert into audit_events (id, workspace_id, actor_id, actor_type, action, resource, ip_address, user_agent, status_code, request_id, occurred_at) values (?, ?, 'a', 'user', 'team.create', ?, '', '', 'ok', '', ?)",
    );
    const ids: Record<string, string[]> = { [workspaces[0]!]: [], [workspaces[1]!]: [] };
    // Timestamps out of order: the chain follows the order of appending.
    for (const [i, t] of [5, 3, 9, 1, 7, 2].entries()) {
      const ws = workspaces[i % 2]!;
      const id = randomUUID();
      ids[ws]!.push(id);
      insert.run(id, ws, `r${i}`, t);
    }
    insert.run(randomUUID(), null, "account", 4);
    raw.close();

    const storage = await createSqliteStorage({ filename });
    try {
      for (const ws of workspaces) {
        await storage.auditEvents.append({
          id: randomUUID(),
          workspaceId: ws,
          actorId: "b",
          actorType: "user",
          action: "team.delete",
          resource: "after",
          ipAddress: "",
          userAgent: "",
          statusCode: "ok",
          requestId: "",
          timestamp: new Date(0),
        });
        const chain = await storage.auditEvents.scanChain(ws, { from: 1, to: 100, limit: 100 });
        expect(chain.map((e) => e.id).slice(0, 3)).toEqual(ids[ws]);
        expect(chain.map((e) => e.position)).toEqual([1, 2, 3, 4]);
        expect(chain[3]!.resource).toBe("after");
        expect(findChainBreak({ position: 0, hash: genesisHash }, chain)).toBeNull();
      }
    } finally {
      await storage.close();
    }
  });
});

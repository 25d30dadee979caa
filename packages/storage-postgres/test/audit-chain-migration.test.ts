import { randomUUID } from "node:crypto";
import { findChainBreak } from "@wap/core/internal";
import { genesisHash } from "@wap/core/storage";
import { createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pgServer: TestPostgres;
beforeAll(async () => {
  pgServer = await startTestPostgres();
}, 120_000);
afterAll(() => pgServer?.stop(), 60_000);

describe("014_audit_chain on PostgreSQL", () => {
  it("chains the entries logged before it (pages of them), in the order they were appended", async () => {
    const fresh = await pgServer.freshSchema();
    await (await createPostgresStorage({ connectionString: fresh })).close();
    const schema = new URL(fresh).searchParams.get("application_name");
    const workspaceId = randomUUID();
    const ids: string[] = [];
    // A database from before the chain, with more entries than one page of the migration.
    await pgServer.admin(async (c) => {
      await c.query(
        `drop table ${schema}.audit_chain_heads, ${schema}.audit_checkpoints, ${schema}.audit_signing_keys; drop function ${schema}.wap_chain_hash; drop index ${schema}.audit_events_chain_key`,
      );
      await c.query(
        `alter table ${schema}.audit_events drop column chain_position, drop column previous_hash, drop column hash`,
      );
      // And without what later migrations add (Kysely applies only a history without gaps).
      await c.query(
        `drop table ${schema}.webhook_deliveries, ${schema}.webhook_secrets, ${schema}.webhook_endpoints`,
      );
      await c.query(`drop table ${schema}.ssh_sessions`);
      await c.query(`alter table ${schema}.daemons drop column require_recording`);
      await c.query(`drop table ${schema}.access_requests`);
      await c.query(
        `alter table ${schema}.principal_subjects drop column grant_kind, drop column valid_until, drop column approval_policy, drop column limits`,
      );
      await c.query(
        `alter table ${schema}.issued_certificates drop column limits, drop column single_use, drop column step_up_id`,
      );
      await c.query(`drop table ${schema}.ssh_step_up_certificates, ${schema}.ssh_step_ups`);
      await c.query(`delete from ${schema}.wap_schema_migration where name >= '014_audit_chain'`);
      await c.query(
        `insert into ${schema}.workspaces (id, name, description, created_by, enroll_auto_approve, created_at, updated_at) values ($1, 'old', '', 'u', 0, 0, 0)`,
        [workspaceId],
      );
      for (let i = 0; i < 1203; i++) ids.push(randomUUID());
      await c.query(
        `insert into ${schema}.audit_events (id, workspace_id, actor_id, actor_type, action, resource, ip_address, user_agent, status_code, request_id, occurred_at)
         select id, $2, 'a', 'user', 'team.create', 'team:' || n, '', '', 'ok', '', 5000 - n
         from unnest($1::text[]) with ordinality as t(id, n) order by n`,
        [ids, workspaceId],
      );
    });
    const storage = await createPostgresStorage({ connectionString: fresh });
    try {
      const chain = await storage.auditEvents.scanChain(workspaceId, { from: 1, to: 10_000, limit: 10_000 });
      expect(chain.map((e) => e.id)).toEqual(ids);
      expect(findChainBreak({ position: 0, hash: genesisHash }, chain)).toBeNull();
      expect(await storage.auditEvents.chainHead(workspaceId)).toEqual({
        position: 1203,
        hash: chain[1202]!.hash,
      });
    } finally {
      await storage.close();
    }
  }, 60_000);
});

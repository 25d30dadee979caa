/**
 * The audit hash chain with two server instances writing one workspace's log at once over one
 * PostgreSQL schema: one chain, no fork, no entry left out of it.
 */
import { randomBytes, randomUUID } from "node:crypto";
import {
  AuthService,
  ExportAuditLogsRequest_Format,
  TeamService,
  UtilService,
  WorkspaceService,
} from "@wap/api";
import type { Caller } from "@wap/core";
import { rawAuditPublicKey, readChainFile, verifyChainFile } from "@wap/core/audit-chain";
import { findChainBreak } from "@wap/core/internal";
import { genesisHash } from "@wap/core/storage";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { call, twoInstancesOverOnePostgres } from "./support/two-instances.js";

const instances = twoInstancesOverOnePostgres();

const anonymous: Caller = { kind: "anonymous" };

async function signUp(): Promise<Caller> {
  const email = `chain-${randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  await call(instances.a, anonymous, AuthService.method.register, {
    name: "Chain Test",
    email,
    username: `chain${randomBytes(3).toString("hex")}`,
    password,
  });
  const tokens = (await call(instances.a, anonymous, AuthService.method.login, {
    email,
    password,
  })) as unknown as {
    accessToken: string;
  };
  return (await instances.a.authenticate({ bearer: tokens.accessToken })).caller;
}

describe("the audit chain across two instances (PostgreSQL)", () => {
  it("concurrent writers on both instances, in two workspaces, form one chain each and lose no entry", async () => {
    const owner = await signUp();
    const workspaces: string[] = [];
    for (const name of ["chain one", "chain two"]) {
      const created = (await call(instances.a, owner, WorkspaceService.method.createWorkspace, {
        name,
      })) as unknown as {
        workspace: { id: string };
      };
      workspaces.push(created.workspace.id);
    }
    const perInstance = 40;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < perInstance; i++) {
      for (const [n, platform] of [instances.a, instances.b].entries()) {
        // Alternating workspaces, opposite orders on the two instances: their lock orders cross.
        const workspaceId = workspaces[(i + n) % 2]!;
        writes.push(
          call(platform, owner, TeamService.method.createTeam, {
            workspaceId,
            name: `team ${n}-${i}`,
            tags: [],
          }),
          platform.services.storage.append({
            auditEvents: workspaces.map((ws, k) => ({
              id: randomUUID(),
              workspaceId: workspaces[(k + n) % 2] ?? ws,
              actorId: randomUUID(),
              actorType: "user",
              action: "team.create",
              resource: `append:${n}:${i}:${k}`,
              ipAddress: "192.0.2.7",
              userAgent: "test",
              statusCode: "ok",
              requestId: randomUUID(),
              timestamp: new Date(),
            })),
          }),
        );
      }
    }
    await Promise.all(writes);

    const storage = instances.b.services.storage;
    for (const workspaceId of workspaces) {
      const chain = await storage.auditEvents.scanChain(workspaceId, {
        from: 1,
        to: 1_000_000,
        limit: 10_000,
      });
      // Every event of the workspace: its creation, a team each, and both instances' appends.
      const expected = await storage.auditEvents.count(workspaceId, {});
      expect(expected).toBeGreaterThanOrEqual(1 + perInstance + 2 * perInstance);
      expect(chain).toHaveLength(expected);
      expect(chain.map((e) => e.position)).toEqual(chain.map((_, i) => i + 1));
      expect(findChainBreak({ position: 0, hash: genesisHash }, chain)).toBeNull();
      expect(await storage.auditEvents.chainHead(workspaceId)).toEqual({
        position: expected,
        hash: chain[expected - 1]!.hash,
      });
    }
  }, 120_000);

  it("an entry deleted or edited with SQL directly is named by the offline verification", async () => {
    const owner = await signUp();
    const created = (await call(instances.a, owner, WorkspaceService.method.createWorkspace, {
      name: "tampered",
    })) as unknown as { workspace: { id: string } };
    const workspaceId = created.workspace.id;
    for (let i = 0; i < 6; i++) {
      await call(i % 2 ? instances.a : instances.b, owner, TeamService.method.createTeam, {
        workspaceId,
        name: `t${i}`,
        tags: [],
      });
    }
    const { publicKeyPem } = (await call(instances.b, owner, UtilService.method.getAuditSigningKey, {
      workspaceId,
    })) as unknown as { publicKeyPem: string };
    const verdict = async () => {
      const { data } = (await call(instances.a, owner, UtilService.method.exportAuditChain, {
        workspaceId,
        format: ExportAuditLogsRequest_Format.JSON,
      })) as unknown as { data: Uint8Array };
      return verifyChainFile(readChainFile(new TextDecoder().decode(data)), rawAuditPublicKey(publicKeyPem)!);
    };
    expect(await verdict()).toMatchObject({ ok: true });
    const sql = new pg.Client({ connectionString: instances.connectionString });
    await sql.connect();
    try {
      const at = async (position: number) =>
        (
          await sql.query<{ id: string }>(
            "select id from audit_events where workspace_id = $1 and chain_position = $2",
            [workspaceId, position],
          )
        ).rows[0]!.id;
      const edited = await at(5);
      await sql.query("update audit_events set ip_address = '192.0.2.66' where id = $1", [edited]);
      expect(await verdict()).toMatchObject({ ok: false, problem: "edited", position: 5, id: edited });
      await sql.query("delete from audit_events where workspace_id = $1 and chain_position = 3", [
        workspaceId,
      ]);
      expect(await verdict()).toMatchObject({ ok: false, problem: "missing", position: 3 });
    } finally {
      await sql.end();
    }
  }, 60_000);
});

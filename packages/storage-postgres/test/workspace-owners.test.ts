/**
 * The last owner of a workspace cannot be demoted or removed, also when the requests that would
 * do it race on two server instances over one PostgreSQL: each instance sees "another owner"
 * before either commits, and only the per-workspace ownership lock keeps one of them from
 * succeeding.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { AuthService, WorkspaceService } from "@wap/api";
import type { Caller } from "@wap/core";
import { describe, expect, it } from "vitest";
import { call, codeOf, twoInstancesOverOnePostgres } from "./support/two-instances.js";

const instances = twoInstancesOverOnePostgres();

async function signUp(): Promise<Caller & { kind: "user" }> {
  const name = `own${randomBytes(4).toString("hex")}`;
  const email = `${name}@example.com`;
  await call(instances.a, { kind: "anonymous" }, AuthService.method.register, {
    name: `${name} Test`,
    email,
    username: name,
    password: "correct horse battery",
  });
  const tokens = (await call(instances.a, { kind: "anonymous" }, AuthService.method.login, {
    email,
    password: "correct horse battery",
  })) as unknown as { accessToken: string };
  const { caller } = await instances.a.authenticate({ bearer: tokens.accessToken });
  if (caller.kind !== "user") throw new Error("no user");
  return caller;
}

/** A workspace with `count` owners (the creator and count - 1 promoted members). */
async function workspaceWithOwners(count: number) {
  const owners = [await signUp()];
  const { workspace } = (await call(instances.a, owners[0]!, WorkspaceService.method.createWorkspace, {
    name: `owners ${randomUUID().slice(0, 8)}`,
  })) as unknown as { workspace: { id: string } };
  for (let i = 1; i < count; i++) {
    const user = await signUp();
    const now = new Date();
    await instances.a.services.storage.members.insert({
      workspaceId: workspace.id,
      userId: user.userId,
      role: "owner",
      createdAt: now,
      updatedAt: now,
    });
    owners.push(user);
  }
  return { workspaceId: workspace.id, owners };
}

async function ownersOf(workspaceId: string) {
  return (await instances.a.services.storage.members.listByWorkspace(workspaceId)).filter(
    (m) => m.role === "owner",
  );
}

describe("the last owner under concurrency (two instances, PostgreSQL)", () => {
  it("two owners demoting each other at once: exactly one succeeds", async () => {
    for (let round = 0; round < 8; round++) {
      const { workspaceId, owners } = await workspaceWithOwners(2);
      const [x, y] = owners as [Caller & { kind: "user" }, Caller & { kind: "user" }];
      const codes = await Promise.all([
        codeOf(
          call(instances.a, x, WorkspaceService.method.updateWorkspaceMember, {
            workspaceId,
            userId: y.userId,
            roleName: "viewer",
          }),
        ),
        codeOf(
          call(instances.b, y, WorkspaceService.method.updateWorkspaceMember, {
            workspaceId,
            userId: x.userId,
            roleName: "admin",
          }),
        ),
      ]);
      // The loser is either refused as the last owner, or (demoted first) no longer allowed at all.
      expect(codes.filter((c) => c === "ok")).toHaveLength(1);
      expect(codes.filter((c) => c === "failed_precondition" || c === "permission_denied")).toHaveLength(1);
      expect(await ownersOf(workspaceId)).toHaveLength(1);
    }
  });

  it("owners removing, demoting and leaving at once never leave the workspace without an owner", async () => {
    for (let round = 0; round < 6; round++) {
      const { workspaceId, owners } = await workspaceWithOwners(4);
      const [o1, o2, o3, o4] = owners as Array<Caller & { kind: "user" }>;
      const codes = await Promise.all([
        codeOf(
          call(instances.a, o1!, WorkspaceService.method.removeWorkspaceMember, {
            workspaceId,
            userId: o2!.userId,
          }),
        ),
        codeOf(
          call(instances.b, o2!, WorkspaceService.method.updateWorkspaceMember, {
            workspaceId,
            userId: o3!.userId,
            roleName: "viewer",
          }),
        ),
        codeOf(
          call(instances.a, o3!, WorkspaceService.method.removeWorkspaceMember, {
            workspaceId,
            userId: o4!.userId,
          }),
        ),
        codeOf(
          call(instances.b, o4!, WorkspaceService.method.updateWorkspaceMember, {
            workspaceId,
            userId: o1!.userId,
            roleName: "editor",
          }),
        ),
        codeOf(
          call(instances.a, o1!, WorkspaceService.method.removeWorkspaceMember, {
            workspaceId,
            userId: o1!.userId,
          }),
        ),
      ]);
      for (const code of codes)
        expect(["ok", "failed_precondition", "permission_denied", "not_found"]).toContain(code);
      expect((await ownersOf(workspaceId)).length).toBeGreaterThanOrEqual(1);
    }
  });
});

/**
 * TeamService: teams with unique names, tags and filters, and their members.
 */

import { TeamService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { memberWithRole, type Owner, serviceAccountCaller } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const M = TeamService.method;
const ws = () => ada.workspaceId;
const createTeam = async (request: Record<string, unknown>) => {
  const { team } = await t.call(ada.caller, M.createTeam, { workspaceId: ws(), ...request });
  t.clock.advance(1000);
  return team!;
};

describe("teams", () => {
  it("are created with unique names, read, updated field by field and deleted", async () => {
    const ops = await createTeam({ name: "Ops Team", description: "on call", tags: ["prod"] });
    expect(ops).toMatchObject({
      workspaceId: ws(),
      name: "Ops Team",
      description: "on call",
      tags: ["prod"],
      members: [],
    });
    const dup = await expectCode(createTeam({ name: "Ops Team" }), "already_exists");
    expect(dup.reason).toBe("TEAM_NAME_TAKEN");
    const dev = await createTeam({ name: "dev" });
    await expectCode(
      t.call(ada.caller, M.updateTeam, { workspaceId: ws(), id: dev.id, name: "Ops Team" }),
      "already_exists",
    );
    const { team } = await t.call(ada.caller, M.updateTeam, {
      workspaceId: ws(),
      id: ops.id,
      description: "",
    });
    expect(team).toMatchObject({ name: "Ops Team", description: "", tags: ["prod"] });
    await t.call(ada.caller, M.deleteTeam, { workspaceId: ws(), id: ops.id });
    await expectCode(t.call(ada.caller, M.getTeam, { workspaceId: ws(), id: ops.id }), "not_found");
    await expectCode(t.call(ada.caller, M.deleteTeam, { workspaceId: ws(), id: ops.id }), "not_found");
    // The name is free again.
    await createTeam({ name: "Ops Team" });
  });

  it("are listed with query, tag filters, paging and their members", async () => {
    const ops = await createTeam({ name: "Ops", tags: ["prod", "eu"] });
    await createTeam({ name: "Dev", description: "builds things", tags: ["prod"] });
    await createTeam({ name: "Lab", tags: ["dev"] });
    const vic = await memberWithRole(t, ws(), "viewer");
    await t.call(ada.caller, M.addTeamMember, {
      workspaceId: ws(),
      teamId: ops.id,
      userId: vic.caller.userId,
    });
    const robot = await serviceAccountCaller(t, ada, "viewer");
    const list = async (request: Record<string, unknown>) => {
      const res = await t.call(robot, M.listTeams, { workspaceId: ws(), ...request });
      return { names: res.teams.map((team) => team.name), total: res.total };
    };
    expect(await list({})).toEqual({ names: ["Ops", "Dev", "Lab"], total: 3 });
    expect(await list({ tags: ["prod"] })).toEqual({ names: ["Ops", "Dev"], total: 2 });
    expect(await list({ tags: ["prod", "eu"] })).toEqual({ names: ["Ops"], total: 1 });
    expect(await list({ query: "BUILDS" })).toEqual({ names: ["Dev"], total: 1 });
    expect(await list({ limit: 1, offset: 2 })).toEqual({ names: ["Lab"], total: 3 });
    const { teams } = await t.call(robot, M.listTeams, { workspaceId: ws(), query: "ops" });
    expect(teams[0]?.members.map((m) => [m.id, m.roleName, m.email])).toEqual([
      [vic.caller.userId, "viewer", vic.email],
    ]);
  });

  it("take workspace members only; adding twice is fine; removing a non-member is not_found", async () => {
    const ops = await createTeam({ name: "ops" });
    const vic = await memberWithRole(t, ws(), "viewer");
    const add = (userId: string, teamId = ops.id) =>
      t.call(ada.caller, M.addTeamMember, { workspaceId: ws(), teamId, userId });
    await add(vic.caller.userId);
    await add(vic.caller.userId);
    await add(ada.caller.userId);
    const { team } = await t.call(vic.caller, M.getTeam, { workspaceId: ws(), id: ops.id });
    expect(team?.members.map((m) => m.id).sort()).toEqual([vic.caller.userId, ada.caller.userId].sort());
    const outsider = await t.signUp();
    await expectCode(add(outsider.caller.userId), "not_found");
    await expectCode(add(vic.caller.userId, crypto.randomUUID()), "not_found");
    await t.call(ada.caller, M.removeTeamMember, {
      workspaceId: ws(),
      teamId: ops.id,
      userId: vic.caller.userId,
    });
    await expectCode(
      t.call(ada.caller, M.removeTeamMember, {
        workspaceId: ws(),
        teamId: ops.id,
        userId: vic.caller.userId,
      }),
      "not_found",
    );
    const { items } = await t.storage.auditEvents.list(ws(), { limit: 20, offset: 0 });
    expect(items.filter((e) => e.action === "team.member.add")).toHaveLength(2);
  });

  it("are managed by editors; viewers and viewer tokens only read", async () => {
    const ed = await memberWithRole(t, ws(), "editor");
    const vic = await memberWithRole(t, ws(), "viewer");
    const robot = await serviceAccountCaller(t, ada, "viewer");
    const { team } = await t.call(ed.caller, M.createTeam, { workspaceId: ws(), name: "ops" });
    for (const caller of [vic.caller, robot]) {
      await expectCode(t.call(caller, M.createTeam, { workspaceId: ws(), name: "x" }), "permission_denied");
      await expectCode(
        t.call(caller, M.deleteTeam, { workspaceId: ws(), id: team!.id }),
        "permission_denied",
      );
      await t.call(caller, M.getTeam, { workspaceId: ws(), id: team!.id });
    }
  });
});

/**
 * WorkspaceService members and settings: reading and listing members, role changes, removal and
 * ownership transfer with their rules, and UpdateWorkspaceSettings.
 */

import { InvitationService, TeamService, WorkspaceService } from "@wap/api";
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

const ws = () => ada.workspaceId;
const duration = (seconds: number) => ({ seconds: BigInt(seconds), nanos: 0 });

describe("reading members", () => {
  it("GetWorkspaceMember shows the profile and the role; a non-member is not_found", async () => {
    const vic = await memberWithRole(t, ws(), "viewer");
    const { member } = await t.call(vic.caller, WorkspaceService.method.getWorkspaceMember, {
      workspaceId: ws(),
      userId: ada.caller.userId,
    });
    expect(member).toMatchObject({
      id: ada.caller.userId,
      workspaceId: ws(),
      email: ada.email,
      roleName: "owner",
      roleDescription: expect.stringContaining("Full control"),
    });
    const outsider = await t.signUp();
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.getWorkspaceMember, {
        workspaceId: ws(),
        userId: outsider.caller.userId,
      }),
      "not_found",
    );
  });

  it("ListWorkspaceMembers filters by query, role and team, and pages with a total", async () => {
    const editors = [await memberWithRole(t, ws(), "editor"), await memberWithRole(t, ws(), "editor")];
    const vic = await memberWithRole(t, ws(), "viewer");
    const list = (request: Record<string, unknown>) =>
      t.call(vic.caller, WorkspaceService.method.listWorkspaceMembers, { workspaceId: ws(), ...request });
    expect((await list({})).total).toBe(4);
    // Members who joined at the same instant come in user-id order.
    expect((await list({ roleName: "editor" })).members.map((m) => m.id)).toEqual(
      editors.map((e) => e.caller.userId).sort(),
    );
    expect((await list({ query: vic.email.toUpperCase() })).members.map((m) => m.id)).toEqual([
      vic.caller.userId,
    ]);
    const page = await list({ limit: 2, offset: 1 });
    expect(page.total).toBe(4);
    expect(page.members).toHaveLength(2);
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ws(),
      name: "ops",
    });
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ws(),
      teamId: team!.id,
      userId: vic.caller.userId,
    });
    expect((await list({ teamIds: [team!.id] })).members.map((m) => m.id)).toEqual([vic.caller.userId]);
  });
});

describe("roles", () => {
  it("admins change roles of non-owners; only owners grant or take away the owner role", async () => {
    const admin = await memberWithRole(t, ws(), "admin");
    const ed = await memberWithRole(t, ws(), "editor");
    const setRole = (caller: typeof admin.caller, userId: string, roleName: string) =>
      t.call(caller, WorkspaceService.method.updateWorkspaceMember, { workspaceId: ws(), userId, roleName });
    await setRole(admin.caller, ed.caller.userId, "viewer");
    expect((await t.storage.members.find(ws(), ed.caller.userId))?.role).toBe("viewer");
    await expectCode(setRole(admin.caller, ed.caller.userId, "owner"), "permission_denied");
    await expectCode(setRole(admin.caller, ada.caller.userId, "viewer"), "permission_denied");
    await expectCode(setRole(ed.caller, admin.caller.userId, "viewer"), "permission_denied");
    await expectCode(setRole(admin.caller, ed.caller.userId, "superuser"), "invalid_argument");
    await setRole(ada.caller, ed.caller.userId, "owner");
    expect((await t.storage.members.find(ws(), ed.caller.userId))?.role).toBe("owner");
  });

  it("the last owner can be neither demoted nor removed", async () => {
    const admin = await memberWithRole(t, ws(), "admin");
    const err = await expectCode(
      t.call(ada.caller, WorkspaceService.method.updateWorkspaceMember, {
        workspaceId: ws(),
        userId: ada.caller.userId,
        roleName: "admin",
      }),
      "failed_precondition",
    );
    expect(err.reason).toBe("LAST_OWNER");
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
        workspaceId: ws(),
        userId: ada.caller.userId,
      }),
      "failed_precondition",
    );
    await expectCode(
      t.call(admin.caller, WorkspaceService.method.removeWorkspaceMember, {
        workspaceId: ws(),
        userId: ada.caller.userId,
      }),
      "permission_denied",
    );
    expect((await t.storage.members.find(ws(), ada.caller.userId))?.role).toBe("owner");
  });

  it("racing demotions of two owners leave exactly one owner", async () => {
    const bea = await memberWithRole(t, ws(), "owner");
    const demote = (caller: typeof bea.caller, userId: string) =>
      t.call(caller, WorkspaceService.method.updateWorkspaceMember, {
        workspaceId: ws(),
        userId,
        roleName: "viewer",
      });
    const outcomes = await Promise.allSettled([
      demote(ada.caller, bea.caller.userId),
      demote(bea.caller, ada.caller.userId),
    ]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    const owners = (await t.storage.members.listByWorkspace(ws())).filter((m) => m.role === "owner");
    expect(owners).toHaveLength(1);
  });

  it("removing a member takes them out of teams and grants; removing a non-member is not_found", async () => {
    const vic = await memberWithRole(t, ws(), "viewer");
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ws(),
      name: "ops",
    });
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ws(),
      teamId: team!.id,
      userId: vic.caller.userId,
    });
    await t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
      workspaceId: ws(),
      userId: vic.caller.userId,
    });
    expect(await t.storage.members.find(ws(), vic.caller.userId)).toBeNull();
    expect(await t.storage.teams.listMembers(ws(), [team!.id])).toEqual([]);
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
        workspaceId: ws(),
        userId: vic.caller.userId,
      }),
      "not_found",
    );
    const { items } = await t.storage.auditEvents.list(ws(), { limit: 5, offset: 0 });
    expect(items.map((e) => e.action)).toContain("member.remove");
  });
});

describe("ownership transfer", () => {
  it("makes the new owner an owner and the previous one an admin", async () => {
    const bea = await memberWithRole(t, ws(), "editor");
    await t.call(ada.caller, WorkspaceService.method.updateWorkspaceOwner, {
      workspaceId: ws(),
      newOwner: bea.caller.userId,
    });
    expect((await t.storage.members.find(ws(), bea.caller.userId))?.role).toBe("owner");
    expect((await t.storage.members.find(ws(), ada.caller.userId))?.role).toBe("admin");
    // The former owner can no longer transfer or delete.
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.updateWorkspaceOwner, {
        workspaceId: ws(),
        newOwner: ada.caller.userId,
      }),
      "permission_denied",
    );
  });

  it("needs the new owner to be a member, the caller to be an owner and a person", async () => {
    const outsider = await t.signUp();
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.updateWorkspaceOwner, {
        workspaceId: ws(),
        newOwner: outsider.caller.userId,
      }),
      "not_found",
    );
    const admin = await memberWithRole(t, ws(), "admin");
    await expectCode(
      t.call(admin.caller, WorkspaceService.method.updateWorkspaceOwner, {
        workspaceId: ws(),
        newOwner: admin.caller.userId,
      }),
      "permission_denied",
    );
    const robot = await serviceAccountCaller(t, ada, "editor");
    await expectCode(
      t.call(robot, WorkspaceService.method.updateWorkspaceOwner, {
        workspaceId: ws(),
        newOwner: admin.caller.userId,
      }),
      "permission_denied",
    );
    // Transferring to oneself changes nothing.
    await t.call(ada.caller, WorkspaceService.method.updateWorkspaceOwner, {
      workspaceId: ws(),
      newOwner: ada.caller.userId,
    });
    expect((await t.storage.members.find(ws(), ada.caller.userId))?.role).toBe("owner");
  });
});

describe("UpdateWorkspaceSettings", () => {
  it("sets auto-approval and the lifetime of the next invite link; reports current expiries", async () => {
    const res = await t.call(ada.caller, WorkspaceService.method.updateWorkspaceSettings, {
      workspaceId: ws(),
      enrollAutoApprove: true,
      inviteExpiry: duration(3600),
    });
    expect(res.settings).toMatchObject({ enrollAutoApprove: true });
    expect(res.settings?.inviteExpiresAt).toBeUndefined();
    expect(await t.storage.workspaceSettings.find(ws())).toMatchObject({
      inviteExpirySeconds: 3600,
      enrollExpirySeconds: 24 * 3600,
    });
    const link = await t.call(ada.caller, InvitationService.method.refreshInviteToken, { workspaceId: ws() });
    expect(Number(link.expiresAt!.seconds) * 1000).toBe(t.clock.now().getTime() + 3600_000);
    const { workspace } = await t.call(ada.caller, WorkspaceService.method.getWorkspace, {
      workspaceId: ws(),
    });
    expect(workspace?.settings?.inviteExpiresAt).toEqual(link.expiresAt);
    expect(workspace?.settings?.enrollAutoApprove).toBe(true);
    // Omitted fields stay as they are.
    await t.call(ada.caller, WorkspaceService.method.updateWorkspaceSettings, {
      workspaceId: ws(),
      enrollExpiry: duration(300),
    });
    expect(await t.storage.workspaceSettings.find(ws())).toMatchObject({
      inviteExpirySeconds: 3600,
      enrollExpirySeconds: 300,
    });
    expect((await t.storage.workspaces.findById(ws()))?.enrollAutoApprove).toBe(true);
  });

  it("bounds the expiries to 5 minutes through 30 days, and needs an admin", async () => {
    for (const seconds of [299, 2_592_001]) {
      await expectCode(
        t.call(ada.caller, WorkspaceService.method.updateWorkspaceSettings, {
          workspaceId: ws(),
          inviteExpiry: duration(seconds),
        }),
        "invalid_argument",
      );
    }
    const ed = await memberWithRole(t, ws(), "editor");
    await expectCode(
      t.call(ed.caller, WorkspaceService.method.updateWorkspaceSettings, {
        workspaceId: ws(),
        enrollAutoApprove: true,
      }),
      "permission_denied",
    );
  });
});

import { CertificateKeyType, CertificateService, WorkspaceService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await createTestPlatform();
});
afterEach(() => t.platform.close());

describe("WorkspaceService", () => {
  it("makes the creator the owner and lists only the caller's workspaces", async () => {
    const ada = await t.owner();
    const bob = await t.owner();
    expect(await t.storage.members.find(ada.workspaceId, ada.caller.userId)).toMatchObject({ role: "owner" });
    const { workspaces } = await t.call(ada.caller, WorkspaceService.method.listWorkspaces, {});
    expect(workspaces.map((w) => w.id)).toEqual([ada.workspaceId]);
    expect(workspaces[0]).toMatchObject({ createdBy: ada.caller.userId });
    expect(bob.workspaceId).not.toBe(ada.workspaceId);
  });

  it("updates only the fields sent", async () => {
    const ada = await t.owner();
    await t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
      workspaceId: ada.workspaceId,
      description: "infra",
    });
    const { workspace } = await t.call(ada.caller, WorkspaceService.method.getWorkspace, {
      workspaceId: ada.workspaceId,
    });
    expect(workspace).toMatchObject({ name: `ws of ${ada.email}`, description: "infra" });
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
        workspaceId: ada.workspaceId,
        name: "ab",
      }),
      "invalid_argument",
    );
  });

  it("answers not_found alike for another tenant's workspace and for none at all", async () => {
    const ada = await t.owner();
    const bob = await t.owner();
    const theirs = await expectCode(
      t.call(ada.caller, WorkspaceService.method.getWorkspace, { workspaceId: bob.workspaceId }),
      "not_found",
    );
    const none = await expectCode(
      t.call(ada.caller, WorkspaceService.method.getWorkspace, {
        workspaceId: "00000000-0000-4000-8000-000000000000",
      }),
      "not_found",
    );
    expect(theirs.message.replace(bob.workspaceId, "X")).toBe(
      none.message.replace("00000000-0000-4000-8000-000000000000", "X"),
    );
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: bob.workspaceId }),
      "not_found",
    );
    expect(await t.storage.workspaces.findById(bob.workspaceId)).not.toBeNull();
  });

  it("enforces roles: a viewer reads but cannot update", async () => {
    const ada = await t.owner();
    const vic = await t.signUp("vic");
    const now = new Date();
    await t.storage.members.insert({
      workspaceId: ada.workspaceId,
      userId: vic.caller.userId,
      role: "viewer",
      createdAt: now,
      updatedAt: now,
    });
    await t.call(vic.caller, WorkspaceService.method.getWorkspace, { workspaceId: ada.workspaceId });
    await expectCode(
      t.call(vic.caller, WorkspaceService.method.updateWorkspace, {
        workspaceId: ada.workspaceId,
        name: "mine now",
      }),
      "permission_denied",
    );
    await expectCode(
      t.call(vic.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: ada.workspaceId }),
      "permission_denied",
    );
  });

  it("deletes the workspace with everything in it and leaves an audit record", async () => {
    const ada = await t.owner();
    const { certificateAuthority } = await t.call(
      ada.caller,
      CertificateService.method.createCertificateAuthority,
      {
        workspaceId: ada.workspaceId,
        name: "ssh",
        keyType: CertificateKeyType.ED25519,
      },
    );
    await t.call(ada.caller, WorkspaceService.method.deleteWorkspace, { workspaceId: ada.workspaceId });
    expect(await t.storage.workspaces.findById(ada.workspaceId)).toBeNull();
    expect(
      await t.storage.certificateAuthorities.findById(ada.workspaceId, certificateAuthority!.id),
    ).toBeNull();
    expect(await t.storage.members.find(ada.workspaceId, ada.caller.userId)).toBeNull();
    await expectCode(
      t.call(ada.caller, WorkspaceService.method.getWorkspace, { workspaceId: ada.workspaceId }),
      "not_found",
    );
  });

  it("records an audit event for every change", async () => {
    const ada = await t.owner();
    await t.call(ada.caller, WorkspaceService.method.updateWorkspace, {
      workspaceId: ada.workspaceId,
      description: "x",
    });
    const { items } = await t.storage.auditEvents.list(ada.workspaceId, { limit: 10, offset: 0 });
    expect(items.map((e) => e.action)).toEqual(["workspace.update", "workspace.create"]);
    expect(items[0]).toMatchObject({
      actorId: ada.caller.userId,
      actorType: "user",
      resource: `workspace:${ada.workspaceId}`,
    });
  });
});

import { CertificateKeyType, CertificateService, ServiceAccountService, WorkspaceService } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Awaited<ReturnType<TestPlatform["owner"]>>;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
});
afterEach(() => t.platform.close());

const createAccount = (request: Record<string, unknown>) =>
  t.call(ada.caller, ServiceAccountService.method.createServiceAccount, {
    workspaceId: ada.workspaceId,
    name: "ci",
    ...request,
  });

describe("service accounts", () => {
  it("returns the token once and keeps only its hash", async () => {
    const res = await createAccount({ name: "deploy-bot", roleName: "editor", tags: ["ci"] });
    expect(res.token).toMatch(/^wapsa_[0-9a-f-]{36}_[0-9a-f]{64}$/);
    const stored = await t.storage.serviceAccounts.findById(ada.workspaceId, res.serviceAccount!.id);
    expect(stored?.tokenHash).not.toContain(res.token.slice(-64));
    const { serviceAccount } = await t.call(ada.caller, ServiceAccountService.method.getServiceAccount, {
      workspaceId: ada.workspaceId,
      id: res.serviceAccount!.id,
    });
    expect(serviceAccount).toMatchObject({ name: "deploy-bot", roleName: "editor", tags: ["ci"] });
  });

  it("a viewer token reads but cannot write; an editor token writes inside its workspace only", async () => {
    const viewer = await createAccount({ name: "reader" });
    const editor = await createAccount({ name: "writer", roleName: "editor" });
    const asViewer = (await t.platform.authenticate({ bearer: viewer.token })).caller;
    const asEditor = (await t.platform.authenticate({ bearer: editor.token })).caller;
    expect(asViewer).toMatchObject({ kind: "service_account", role: "viewer", workspaceId: ada.workspaceId });

    await t.call(asViewer, WorkspaceService.method.getWorkspace, { workspaceId: ada.workspaceId });
    await expectCode(
      t.call(asViewer, CertificateService.method.createCertificateAuthority, {
        workspaceId: ada.workspaceId,
        name: "nope",
        keyType: CertificateKeyType.ED25519,
      }),
      "permission_denied",
    );
    await t.call(asEditor, CertificateService.method.createCertificateAuthority, {
      workspaceId: ada.workspaceId,
      name: "yes",
      keyType: CertificateKeyType.ED25519,
    });
    // Managing service accounts is an admin's job, not an editor's.
    await expectCode(createAccountAs(asEditor), "permission_denied");
    const bob = await t.owner();
    await expectCode(
      t.call(asEditor, WorkspaceService.method.getWorkspace, { workspaceId: bob.workspaceId }),
      "not_found",
    );
    const { workspaces } = await t.call(asEditor, WorkspaceService.method.listWorkspaces, {});
    expect(workspaces.map((w) => w.id)).toEqual([ada.workspaceId]);
  });

  it("stops working when deleted or expired, and records lastUsedAt", async () => {
    const expiring = await createAccount({
      name: "temp",
      expiresAt: { seconds: BigInt(Math.floor(t.clock.now().getTime() / 1000) + 3600), nanos: 0 },
    });
    await t.platform.authenticate({ bearer: expiring.token });
    const used = await t.storage.serviceAccounts.findById(ada.workspaceId, expiring.serviceAccount!.id);
    expect(used?.lastUsedAt).toEqual(t.clock.now());
    t.clock.advance(3600 * 1000);
    await expectCode(t.platform.authenticate({ bearer: expiring.token }), "unauthenticated");

    const doomed = await createAccount({ name: "doomed" });
    await t.call(ada.caller, ServiceAccountService.method.deleteServiceAccount, {
      workspaceId: ada.workspaceId,
      id: doomed.serviceAccount!.id,
    });
    await expectCode(t.platform.authenticate({ bearer: doomed.token }), "unauthenticated");
    // A forged secret for a live account fails too.
    const live = await createAccount({ name: "live" });
    await expectCode(
      t.platform.authenticate({
        bearer: `${live.token.slice(0, -1)}${live.token.endsWith("0") ? "1" : "0"}`,
      }),
      "unauthenticated",
    );
  });

  it("validates names, roles, expiry, and keeps names unique", async () => {
    await expectCode(createAccount({ name: "-bad" }), "invalid_argument");
    await expectCode(createAccount({ roleName: "admin" }), "invalid_argument");
    await expectCode(createAccount({ expiresAt: { seconds: 1n, nanos: 0 } }), "invalid_argument");
    await createAccount({ name: "unique" });
    await expectCode(createAccount({ name: "unique" }), "already_exists");
  });

  it("lists with filters and paging; updates only what is sent", async () => {
    for (const name of ["a1", "a2", "b1"])
      await createAccount({ name, tags: name.startsWith("a") ? ["team-a"] : [] });
    const page = await t.call(ada.caller, ServiceAccountService.method.listServiceAccounts, {
      workspaceId: ada.workspaceId,
      tags: ["team-a"],
      limit: 1,
    });
    expect(page.total).toBe(2);
    expect(page.serviceAccounts).toHaveLength(1);
    const target = page.serviceAccounts[0]!;
    const { serviceAccount } = await t.call(ada.caller, ServiceAccountService.method.updateServiceAccount, {
      workspaceId: ada.workspaceId,
      id: target.id,
      description: "updated",
    });
    expect(serviceAccount).toMatchObject({ name: target.name, description: "updated", tags: ["team-a"] });
  });
});

function createAccountAs(caller: Parameters<TestPlatform["call"]>[0]) {
  return t.call(caller, ServiceAccountService.method.createServiceAccount, {
    workspaceId: ada.workspaceId,
    name: "sneaky",
  });
}

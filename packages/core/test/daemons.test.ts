import { DaemonService, DaemonStatus } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Awaited<ReturnType<TestPlatform["owner"]>>;
let daemonId: string;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  daemonId = await insertDaemon(ada.workspaceId, "web-1");
});
afterEach(() => t.platform.close());

async function insertDaemon(workspaceId: string, name: string) {
  const id = t.platform.services.random.uuid();
  const now = t.clock.now();
  await t.storage.daemons.insert({
    id,
    workspaceId,
    targetId: null,
    name,
    status: "pending",
    recordSessions: false,
    metadata: { os: "linux" },
    authPublicKey: "",
    authMethod: "soft",
    onlineSince: null,
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

describe("DaemonService management", () => {
  it("gets and lists daemons with filters", async () => {
    await insertDaemon(ada.workspaceId, "db-1");
    const { daemon } = await t.call(ada.caller, DaemonService.method.getDaemon, {
      workspaceId: ada.workspaceId,
      id: daemonId,
    });
    expect(daemon).toMatchObject({
      name: "web-1",
      status: DaemonStatus.PENDING,
      online: false,
      metadata: { os: "linux" },
    });
    const list = await t.call(ada.caller, DaemonService.method.listDaemons, {
      workspaceId: ada.workspaceId,
      query: "WEB",
    });
    expect(list.daemons.map((d) => d.name)).toEqual(["web-1"]);
    expect(list.total).toBe(1);
    const all = await t.call(ada.caller, DaemonService.method.listDaemons, {
      workspaceId: ada.workspaceId,
      status: DaemonStatus.PENDING,
    });
    expect(all.total).toBe(2);
  });

  it("accepts, rejects, and never moves back to pending; config changes only when sent", async () => {
    const update = (request: Record<string, unknown>) =>
      t.call(ada.caller, DaemonService.method.updateDaemon, {
        workspaceId: ada.workspaceId,
        id: daemonId,
        ...request,
      });
    await update({ status: DaemonStatus.ACCEPTED });
    await update({ config: { recordSessions: true } });
    let stored = await t.storage.daemons.findById(ada.workspaceId, daemonId);
    expect(stored).toMatchObject({ status: "accepted", recordSessions: true });
    await update({ status: DaemonStatus.REJECTED });
    await expectCode(update({ status: DaemonStatus.PENDING }), "failed_precondition");
    await expectCode(update({ status: DaemonStatus.UNSPECIFIED }), "invalid_argument");
    await expectCode(update({ status: 9 }), "invalid_argument");
    stored = await t.storage.daemons.findById(ada.workspaceId, daemonId);
    expect(stored).toMatchObject({ status: "rejected", recordSessions: true });
  });

  it("lets a daemon delete itself without ids, and nothing else", async () => {
    const other = await insertDaemon(ada.workspaceId, "other");
    const self = { kind: "daemon", daemonId, workspaceId: ada.workspaceId } as const;
    await expectCode(
      t.call(self, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: other }),
      "not_found",
    );
    await expectCode(
      t.call(self, DaemonService.method.getDaemon, { workspaceId: ada.workspaceId, id: daemonId }),
      "permission_denied",
    );
    await t.call(self, DaemonService.method.deleteDaemon, {});
    expect(await t.storage.daemons.findById(ada.workspaceId, daemonId)).toBeNull();
    expect(await t.storage.daemons.findById(ada.workspaceId, other)).not.toBeNull();
  });

  it("keeps tenants apart", async () => {
    const bob = await t.owner();
    await expectCode(
      t.call(bob.caller, DaemonService.method.getDaemon, { workspaceId: bob.workspaceId, id: daemonId }),
      "not_found",
    );
    await expectCode(
      t.call(bob.caller, DaemonService.method.updateDaemon, {
        workspaceId: bob.workspaceId,
        id: daemonId,
        status: DaemonStatus.ACCEPTED,
      }),
      "not_found",
    );
    await expectCode(
      t.call(bob.caller, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: daemonId }),
      "not_found",
    );
    expect((await t.storage.daemons.findById(ada.workspaceId, daemonId))?.status).toBe("pending");
  });
});

/**
 * SyncDaemon: the report is stored (endpoints on the target, metadata), the
 * answer carries the complete username -> ids map of the grants, and only accepted daemons get
 * principals.
 */

import { DaemonService, DaemonStatus, PrincipalType, TargetService, TeamService } from "@wap/api";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultSshPort, normalizeEndpoint } from "../src/daemons/sync.js";
import { memberWithRole, type Owner, serviceAccountCaller } from "./support/access.js";
import { callAsDaemon, enrolledDaemon, grantLogin, type TestDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let d: TestDaemon;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  d = await enrolledDaemon(t, ada, "web-1");
});
afterEach(() => t.platform.close());

const report = {
  users: ["root", "ubuntu"],
  privateIps: ["10.0.0.5:4022", "192.168.1.7:4022"],
  metadata: { hostname: "web-1", os: "linux", arch: "amd64" },
};
const sync = (request: Record<string, unknown> = report, daemon: TestDaemon = d) =>
  callAsDaemon(t, daemon, DaemonService.method.syncDaemon, request);
const accept = (id = d.id, status = DaemonStatus.ACCEPTED) =>
  t.call(ada.caller, DaemonService.method.updateDaemon, { workspaceId: ada.workspaceId, id, status });

describe("SyncDaemon", () => {
  it("stores endpoints and metadata, resolving the daemon from its credentials alone", async () => {
    await sync();
    const { target } = await t.call(ada.caller, TargetService.method.getTarget, {
      workspaceId: ada.workspaceId,
      id: d.targetId,
    });
    expect(target).toMatchObject({ endpoints: report.privateIps, metadata: report.metadata });
    const { daemon } = await t.call(ada.caller, DaemonService.method.getDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
    });
    expect(daemon?.metadata).toEqual(report.metadata);
    expect(await t.storage.daemons.findSync(ada.workspaceId, d.id)).toEqual({
      users: report.users,
      principals: {},
      syncedAt: t.clock.now(),
    });
    // A later report that differs waits for approval (addresses without a port get the SSH
    // default; duplicates collapse); the target keeps its endpoints meanwhile.
    await sync({
      users: [],
      privateIps: ["10.0.0.9", "10.0.0.9:22", "[fd00::1]:4022", "fd00::2"],
      metadata: {},
    });
    const waiting = await t.storage.targets.findById(ada.workspaceId, d.targetId);
    expect(waiting?.endpoints).toEqual(report.privateIps);
    expect(waiting?.reportedEndpoints).toEqual(["10.0.0.9:22", "[fd00::1]:4022", "[fd00::2]:22"]);
    // Reporting the approved endpoints again withdraws what waited.
    await sync({ users: [], privateIps: report.privateIps, metadata: {} });
    expect(
      (await t.storage.targets.findById(ada.workspaceId, d.targetId))?.reportedEndpoints,
    ).toBeUndefined();
  });

  it("gives a PENDING daemon its status and no principals", async () => {
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    const res = await sync();
    expect(res.status).toBe(DaemonStatus.PENDING);
    expect(res.principals).toEqual([]);
    expect(res.config).toMatchObject({ recordSessions: false });
  });

  it("gives an ACCEPTED daemon the complete map: users, team members, service accounts", async () => {
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    const eve = await memberWithRole(t, ada.workspaceId, "viewer");
    const robot = await serviceAccountCaller(t, ada, "viewer");
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ada.workspaceId,
      name: "ops",
    });
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ada.workspaceId,
      teamId: team!.id,
      userId: eve.caller.userId,
    });
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [
      vic.caller.userId,
      ada.caller.userId,
    ]);
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.TEAM, [team!.id]);
    await grantLogin(t, ada, d.targetId, "deploy$", PrincipalType.SERVICE_ACCOUNT, [robot.serviceAccountId]);
    await grantLogin(t, ada, d.targetId, "nobody", PrincipalType.USER, []);
    await accept();
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      config: { recordSessions: true },
    });
    const res = await sync();
    expect(res.status).toBe(DaemonStatus.ACCEPTED);
    expect(res.config).toMatchObject({ recordSessions: true });
    const map = Object.fromEntries(res.principals.map((p) => [p.username, [...p.ids].sort()]));
    expect(map).toEqual({
      deploy$: [robot.serviceAccountId],
      nobody: [],
      ubuntu: [vic.caller.userId, ada.caller.userId, eve.caller.userId].sort(),
    });
    expect(res.principals.map((p) => p.username)).toEqual(["deploy$", "nobody", "ubuntu"]);
    const stored = await t.storage.daemons.findSync(ada.workspaceId, d.id);
    expect(Object.keys(stored!.principals).sort()).toEqual(["deploy$", "nobody", "ubuntu"]);
  });

  it("a REJECTED daemon hears it and nothing else; its report is not stored; a deleted one cannot sync", async () => {
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    await accept();
    await sync();
    await accept(d.id, DaemonStatus.REJECTED);
    const res = await sync({ users: ["x"], privateIps: ["10.9.9.9:1"], metadata: { os: "evil" } });
    expect(res).toMatchObject({ status: DaemonStatus.REJECTED, principals: [] });
    expect((await t.storage.targets.findById(ada.workspaceId, d.targetId))?.endpoints).toEqual(
      report.privateIps,
    );
    await t.call(ada.caller, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: d.id });
    await expectCode(sync(), "unauthenticated");
  });

  it("is for daemons only", async () => {
    await expectCode(t.call(ada.caller, DaemonService.method.syncDaemon, report), "permission_denied");
    await expectCode(
      t.call({ kind: "anonymous" }, DaemonService.method.syncDaemon, report),
      "unauthenticated",
    );
  });

  it("refuses what is not an address, and reports past the bounds", async () => {
    for (const bad of [
      "web-1:22",
      "10.0.0.1:0",
      "10.0.0.1:65536",
      "10.0.0.1:",
      ":22",
      "[10.0.0.1]:22",
      "fd00::1:x",
    ]) {
      await expectCode(sync({ users: [], privateIps: [bad], metadata: {} }), "invalid_argument");
    }
  });
});

describe("endpoint normalisation", () => {
  it("keeps ip:port, adds :22 to bare addresses, brackets IPv6; rejects the rest", () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.option(fc.integer({ min: 1, max: 65_535 })), (ip, port) => {
        const value = port === null ? ip : `${ip}:${port}`;
        expect(normalizeEndpoint(value)).toBe(`${ip}:${port ?? defaultSshPort}`);
      }),
    );
    fc.assert(
      fc.property(fc.ipV6(), fc.option(fc.integer({ min: 1, max: 65_535 })), (ip, port) => {
        const value = port === null ? ip : `[${ip}]:${port}`;
        expect(normalizeEndpoint(value)).toBe(`[${ip}]:${port ?? defaultSshPort}`);
      }),
    );
    fc.assert(
      fc.property(fc.domain(), (host) => {
        expect(normalizeEndpoint(`${host}:22`)).toBeNull();
      }),
    );
  });
});

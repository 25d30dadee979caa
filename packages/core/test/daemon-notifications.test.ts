/**
 * What daemons hear on `daemon:<id>` after a change commits: status
 * decisions, grant changes, authority and target changes, and deletion.
 */

import {
  CertificateService,
  DaemonService,
  DaemonStatus,
  PrincipalService,
  PrincipalType,
  TargetService,
  TeamService,
  WorkspaceService,
} from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openControlStream } from "../src/daemons/control.js";
import { daemonTopic, sessionTopic } from "../src/daemons/events.js";
import type { EventPayload } from "../src/events/event-bus.js";
import { memberWithRole, type Owner, sshAuthority } from "./support/access.js";
import { callAsDaemon, enroll, grantLogin, type TestDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let token: string;
let caId: string;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  caId = (await sshAuthority(t, ada)).id;
  ({ token } = await t.call(ada.caller, DaemonService.method.refreshEnrollToken, {
    workspaceId: ada.workspaceId,
  }));
});
afterEach(() => t.platform.close());

/** Every event of the calls answered so far, delivered. */
const settle = () => t.platform.drain();
const sync = { kind: "notification", eventType: "SYNC_REQUEST" };
const principals = { kind: "notification", eventType: "PRINCIPALS" };

/** An enrolled daemon, and what is published on its topic from now on. */
async function daemon(status: DaemonStatus = DaemonStatus.ACCEPTED, hostname = "web") {
  const d = await enroll(t, token, { hostname });
  if (status !== DaemonStatus.PENDING) await setStatus(d, status);
  const heard: EventPayload[] = [];
  await t.platform.services.events.subscribe(daemonTopic(d.id), (payload) => heard.push(payload));
  return { ...d, heard };
}
const setStatus = (d: TestDaemon, status?: DaemonStatus, recordSessions?: boolean) =>
  t.call(ada.caller, DaemonService.method.updateDaemon, {
    workspaceId: ada.workspaceId,
    id: d.id,
    ...(status !== undefined && { status }),
    ...(recordSessions !== undefined && { config: { recordSessions } }),
  });
/** What was heard since the last look. */
async function drain(heard: EventPayload[]) {
  await settle();
  return heard.splice(0);
}

describe("status decisions", () => {
  it("acceptance and config changes ask to sync; rejection is STATUS REJECTED, last", async () => {
    const d = await daemon(DaemonStatus.PENDING);
    await setStatus(d, DaemonStatus.ACCEPTED);
    expect(await drain(d.heard)).toEqual([sync]);
    await setStatus(d, DaemonStatus.ACCEPTED);
    expect(await drain(d.heard)).toEqual([]);
    // A config change needs a sync, not a new host certificate (nor an sshd reload).
    await setStatus(d, undefined, true);
    expect(await drain(d.heard)).toEqual([{ kind: "notification", eventType: "PRINCIPALS" }]);
    await setStatus(d, DaemonStatus.REJECTED, false);
    expect(await drain(d.heard)).toEqual([{ kind: "notification", eventType: "STATUS", status: "REJECTED" }]);
    await setStatus(d, undefined, true);
    expect(await drain(d.heard)).toEqual([]);
    await setStatus(d, DaemonStatus.ACCEPTED);
    expect(await drain(d.heard)).toEqual([sync]);
  });

  it("rejection closes the daemon's live sessions and tells their relays", async () => {
    const d = await daemon();
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    await openControlStream(
      t.platform.services,
      { kind: "daemon", daemonId: d.id, workspaceId: ada.workspaceId },
      "i/1",
    );
    await callAsDaemon(t, d, DaemonService.method.syncDaemon, { users: [], privateIps: [], metadata: {} });
    const { session } = await t.call(ada.caller, DaemonService.method.createSession, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
      username: "ubuntu",
    });
    const closes: EventPayload[] = [];
    await t.platform.services.events.subscribe(sessionTopic(session!.sessionId), (p) => closes.push(p));
    await drain(d.heard);
    await setStatus(d, DaemonStatus.REJECTED);
    expect(await drain(d.heard)).toEqual([{ kind: "notification", eventType: "STATUS", status: "REJECTED" }]);
    expect(closes).toEqual([
      { kind: "close", sessionId: session!.sessionId, reason: "the daemon was rejected" },
    ]);
  });

  it("deletion ends its streams and sessions and leaves the target, detached, with its grants", async () => {
    const d = await daemon();
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    await drain(d.heard);
    await t.call(ada.caller, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: d.id });
    expect(await drain(d.heard)).toEqual([{ kind: "deleted" }]);
    const target = await t.storage.targets.findById(ada.workspaceId, d.targetId);
    expect(target?.daemonId).toBeNull();
    expect(await t.storage.principals.listByTargets(ada.workspaceId, [d.targetId])).toHaveLength(1);
    await t.call(ada.caller, TargetService.method.deleteTarget, {
      workspaceId: ada.workspaceId,
      id: d.targetId,
    });
  });
});

describe("grant changes", () => {
  it("tell the daemons of the target concerned, once accepted", async () => {
    const web = await daemon(DaemonStatus.ACCEPTED, "web");
    const db = await daemon(DaemonStatus.ACCEPTED, "db");
    const pending = await daemon(DaemonStatus.PENDING, "new");
    const id = await grantLogin(t, ada, web.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    // SetPrincipals, then AddSubjectsToPrincipal: one notification each.
    expect(await drain(web.heard)).toEqual([principals, principals]);
    expect(await drain(db.heard)).toEqual([]);
    await grantLogin(t, ada, pending.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
    expect(await drain(pending.heard)).toEqual([]);
    await t.call(ada.caller, PrincipalService.method.removeSubjectsFromPrincipal, {
      workspaceId: ada.workspaceId,
      id,
      subjectIds: [ada.caller.userId],
      type: PrincipalType.USER,
    });
    expect(await drain(web.heard)).toEqual([principals]);
    // A failed change (rolled back) tells nobody.
    await expectCode(
      t.call(ada.caller, PrincipalService.method.setPrincipals, {
        workspaceId: ada.workspaceId,
        targetId: crypto.randomUUID(),
        usernames: ["x"],
      }),
      "not_found",
    );
    expect(await drain(web.heard)).toEqual([]);
  });

  it("team membership tells the daemons of targets granting the team; revocations tell all", async () => {
    const web = await daemon(DaemonStatus.ACCEPTED, "web");
    const db = await daemon(DaemonStatus.ACCEPTED, "db");
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    const { team } = await t.call(ada.caller, TeamService.method.createTeam, {
      workspaceId: ada.workspaceId,
      name: "ops",
    });
    await grantLogin(t, ada, web.targetId, "ubuntu", PrincipalType.TEAM, [team!.id]);
    await drain(web.heard);
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ada.workspaceId,
      teamId: team!.id,
      userId: vic.caller.userId,
    });
    expect(await drain(web.heard)).toEqual([principals]);
    expect(await drain(db.heard)).toEqual([]);
    await t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
      workspaceId: ada.workspaceId,
      userId: vic.caller.userId,
    });
    expect(await drain(web.heard)).toEqual([principals]);
    expect(await drain(db.heard)).toEqual([principals]);
  });
});

describe("authority and target changes", () => {
  it("rollover or update of a target's CA, and target updates, ask its daemons to sync", async () => {
    const web = await daemon(DaemonStatus.ACCEPTED, "web");
    const other = (await sshAuthority(t, ada, "other")).id;
    const elsewhere = await enroll(t, token, { caId: other, hostname: "elsewhere" });
    await setStatus(elsewhere, DaemonStatus.ACCEPTED);
    await t.call(ada.caller, CertificateService.method.rolloverCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: caId,
    });
    expect(await drain(web.heard)).toEqual([sync]);
    await t.call(ada.caller, CertificateService.method.updateCertificateAuthority, {
      workspaceId: ada.workspaceId,
      id: other,
      description: "not web's",
    });
    expect(await drain(web.heard)).toEqual([]);
    await t.call(ada.caller, TargetService.method.updateTarget, {
      workspaceId: ada.workspaceId,
      id: web.targetId,
      caId: other,
    });
    expect(await drain(web.heard)).toEqual([sync]);
  });
});

/**
 * SSH logins as sessions of the platform, in the core: BeginSSHSession admits a login only with
 * a certificate the platform issued for the daemon's target, unrevoked, whose subject still
 * holds the grant; a live login whose access goes away (certificate revoked, grant removed,
 * member removed, service account deleted) is ended by the enforcement check, audited by the
 * platform with the reason, and its daemon told `terminate`.
 */

import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AccessRequestService,
  CertificateService,
  DaemonService,
  DaemonStatus,
  GrantKind,
  PrincipalService,
  PrincipalType,
  ServiceAccountService,
  SessionKind,
  SignSSHCertificateRequest_CertificateType,
  UtilService,
  WorkspaceService,
} from "@wap/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { daemonTopic } from "../src/daemons/events.js";
import type { EventPayload } from "../src/events/event-bus.js";
import { enforceSshAccess } from "../src/sessions/ssh-enforcement.js";
import { memberWithRole, type Owner, serviceAccountCaller, sshAuthority } from "./support/access.js";
import { subjectKey } from "./support/certificates.js";
import { callAsDaemon, enrolledDaemon, grantLogin, type TestDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let d: TestDaemon;
let caId: string;
const heard: EventPayload[] = [];

beforeAll(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  d = await enrolledDaemon(t, ada, "web-1");
  await t.call(ada.caller, DaemonService.method.updateDaemon, {
    workspaceId: ada.workspaceId,
    id: d.id,
    status: DaemonStatus.ACCEPTED,
  });
  caId = (await t.storage.targets.findById(ada.workspaceId, d.targetId))!.caId;
  await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
  await t.platform.services.events.subscribe(daemonTopic(d.id), (payload) => heard.push(payload));
});
afterAll(() => t.platform.close());

async function certificateFor(caller: Caller, workspaceId = ada.workspaceId, authority = caId) {
  const { line } = await subjectKey({ type: "ed25519" }, `${Math.random()}@laptop`);
  const { signedCertificate } = await t.call(caller, CertificateService.method.signSSHCertificate, {
    workspaceId,
    caId: authority,
    type: SignSSHCertificateRequest_CertificateType.USER,
    publicKey: line,
  });
  return signedCertificate;
}

const begin = (certificate: string, username = "ubuntu") =>
  callAsDaemon(t, d, DaemonService.method.beginSSHSession, {
    certificate,
    username,
    clientAddress: "203.0.113.7:50022",
    kind: SessionKind.SHELL,
    tty: true,
  });

async function endedBy(sessionId: string) {
  await enforceSshAccess(t.platform.services, ada.workspaceId, d.id);
  return t.storage.sshSessions.findById(ada.workspaceId, sessionId);
}

const terminateOf = (sessionId: string) =>
  heard.find((p) => (p as { kind?: string; sessionId?: string }).sessionId === sessionId) as
    | { kind: string; reason: string }
    | undefined;

async function endEntry(sessionId: string) {
  const { logs } = await t.call(ada.caller, UtilService.method.listAuditLogs, {
    workspaceId: ada.workspaceId,
    limit: 100,
  });
  return logs.find((l) => l.resource === `ssh_session:${sessionId}` && l.action === "ssh_session.end");
}

describe("BeginSSHSession", () => {
  it("registers a login with a certificate issued for the target, naming its subject; ListSessions lists it", async () => {
    const { sessionId, requireRecording } = await begin(await certificateFor(ada.caller));
    expect(requireRecording).toBe(false);
    const stored = await t.storage.sshSessions.findById(ada.workspaceId, sessionId!);
    expect(stored).toMatchObject({
      subjectId: ada.caller.userId,
      subjectType: "user",
      username: "ubuntu",
      kind: "shell",
      tty: true,
      clientAddress: "203.0.113.7:50022",
      endedAt: null,
    });
    const { sessions } = await t.call(ada.caller, DaemonService.method.listSessions, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
    });
    expect(sessions.find((s) => s.sessionId === sessionId)).toMatchObject({
      kind: SessionKind.SHELL,
      subjectName: expect.any(String),
      certificateSerial: stored!.certificateSerial,
    });
    await callAsDaemon(t, d, DaemonService.method.endSSHSession, {
      sessionId: sessionId!,
      exitStatus: 0,
      bytesIn: 10n,
      bytesOut: 20n,
      reason: "the login ended (exit 0)",
    });
    expect(await t.storage.sshSessions.findById(ada.workspaceId, sessionId!)).toMatchObject({
      exitStatus: 0,
      bytesIn: 10,
      bytesOut: 20,
      endedBy: "daemon",
    });
  });

  it("refuses, storing nothing: a login as an account not granted, another authority's certificate, another workspace's, garbage", async () => {
    const before = (await t.storage.sshSessions.listLiveByDaemon(ada.workspaceId, d.id)).length;
    await expectCode(begin(await certificateFor(ada.caller), "root"), "permission_denied");
    const other = await sshAuthority(t, ada);
    await expectCode(begin(await certificateFor(ada.caller, ada.workspaceId, other.id)), "permission_denied");
    const elsewhere = await t.owner();
    const foreignCa = await sshAuthority(t, elsewhere);
    await expectCode(
      begin(await certificateFor(elsewhere.caller, elsewhere.workspaceId, foreignCa.id)),
      "permission_denied",
    );
    await expectCode(begin("ssh-ed25519-cert-v01@openssh.com AAAA"), "permission_denied");
    expect(await t.storage.sshSessions.listLiveByDaemon(ada.workspaceId, d.id)).toHaveLength(before);
  });
});

describe("a login the agent held while the server could not be reached", () => {
  const now = () => t.platform.services.clock.now().getTime();
  const held = (certificate: string, offlineId: string, startedAt: Date, username = "ubuntu") =>
    callAsDaemon(t, d, DaemonService.method.beginSSHSession, {
      certificate,
      username,
      clientAddress: "203.0.113.7:50022",
      kind: SessionKind.EXEC,
      command: "uptime",
      offlineId,
      startedAt: timestampFromDate(startedAt),
      recorded: true,
    });

  it("is registered as it was, once however often it is sent, with its own start and end", async () => {
    const certificate = await certificateFor(ada.caller);
    const offlineId = crypto.randomUUID();
    const startedAt = new Date(now() - 60_000);
    const first = await held(certificate, offlineId, startedAt);
    const again = await held(certificate, offlineId, startedAt);
    expect(again.sessionId).toBe(first.sessionId);
    expect(first.record).toBe(true);
    expect(first.sessionId).not.toBe(offlineId);
    const stored = await t.storage.sshSessions.findById(ada.workspaceId, first.sessionId!);
    expect(stored).toMatchObject({ recorded: true, command: "uptime", endedAt: null });
    expect(stored!.startedAt.getTime()).toBe(startedAt.getTime());
    const endedAt = new Date(now() - 30_000);
    await callAsDaemon(t, d, DaemonService.method.endSSHSession, {
      sessionId: first.sessionId!,
      exitStatus: 0,
      reason: "the login ended (exit 0)",
      endedAt: timestampFromDate(endedAt),
    });
    const ended = await t.storage.sshSessions.findById(ada.workspaceId, first.sessionId!);
    expect(ended!.endedAt!.getTime()).toBe(endedAt.getTime());
    const { logs } = await t.call(ada.caller, UtilService.method.listAuditLogs, {
      workspaceId: ada.workspaceId,
      limit: 100,
    });
    expect(
      logs
        .filter((l) => l.resource === `ssh_session:${first.sessionId}`)
        .map((l) => l.action)
        .sort(),
    ).toEqual(["ssh_session.end", "ssh_session.start"]);
  });

  it("is registered even when its grant went away since (sshd let it in), and ended at once if it still runs", async () => {
    const certificate = await certificateFor(ada.caller);
    const { sessionId } = await held(certificate, crypto.randomUUID(), new Date(now() - 5_000), "root");
    expect(await endedBy(sessionId!)).toMatchObject({ endedBy: expect.stringMatching(/^system:/) });
  });

  it("refuses, storing nothing: a certificate the platform did not issue, a start in the future, a start without offlineId", async () => {
    const before = (await t.storage.sshSessions.listLiveByDaemon(ada.workspaceId, d.id)).length;
    await expectCode(
      held("ssh-ed25519-cert-v01@openssh.com AAAA", crypto.randomUUID(), new Date(now())),
      "permission_denied",
    );
    const certificate = await certificateFor(ada.caller);
    const future = held(certificate, crypto.randomUUID(), new Date(now() + 3_600_000));
    await expectCode(future, "invalid_argument");
    await expect(future).rejects.toMatchObject({ violations: [{ field: "startedAt" }] });
    const alone = callAsDaemon(t, d, DaemonService.method.beginSSHSession, {
      certificate,
      username: "ubuntu",
      kind: SessionKind.SHELL,
      startedAt: timestampFromDate(new Date(now())),
    });
    await expectCode(alone, "invalid_argument");
    await expect(alone).rejects.toMatchObject({ violations: [{ field: "offlineId" }] });
    expect(await t.storage.sshSessions.listLiveByDaemon(ada.workspaceId, d.id)).toHaveLength(before);
  });
});

describe("AppendSSHRecording", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  const append = (sessionId: string, offset: number, data: string, final = false) =>
    callAsDaemon(t, d, DaemonService.method.appendSSHRecording, {
      sessionId,
      offset: BigInt(offset),
      data: bytes(data),
      final,
    });

  it("appends by offset: repeated bytes are skipped, a gap is refused with the size to resume from, final completes it", async () => {
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      config: { recordSessions: true },
    });
    const { sessionId, record } = await begin(await certificateFor(ada.caller));
    expect(record).toBe(true);
    expect((await append(sessionId!, 0, "header\n")).size).toBe(7n);
    expect((await append(sessionId!, 0, "header\n")).size).toBe(7n);
    expect((await append(sessionId!, 4, "er\none\n")).size).toBe(11n);
    await expectCode(append(sessionId!, 20, "gap"), "failed_precondition");
    expect((await append(sessionId!, 11, "two\n", true)).size).toBe(15n);
    const recording = await t.storage.recordings.findById(ada.workspaceId, sessionId!);
    expect(recording).toMatchObject({
      complete: true,
      sizeBytes: 15,
      userId: ada.caller.userId,
      username: "ubuntu",
    });
    const chunks = await t.storage.recordings.scanChunks(ada.workspaceId, sessionId!, { limit: 10 });
    expect(Buffer.concat(chunks.map((c) => c.data)).toString()).toBe("header\none\ntwo\n");
    // Complete: later appends store nothing.
    expect((await append(sessionId!, 15, "more")).size).toBe(15n);
    await t.call(ada.caller, DaemonService.method.updateDaemon, {
      workspaceId: ada.workspaceId,
      id: d.id,
      config: { recordSessions: false },
    });
  });

  it("is refused for a login begun while the daemon did not record, and for another daemon's login", async () => {
    const { sessionId, record } = await begin(await certificateFor(ada.caller));
    expect(record).toBe(false);
    await expectCode(append(sessionId!, 0, "x"), "failed_precondition");
    await expectCode(append(crypto.randomUUID(), 0, "x"), "not_found");
  });
});

describe("live logins end when their access goes", () => {
  it("the certificate revoked", async () => {
    const certificate = await certificateFor(ada.caller);
    const { sessionId } = await begin(certificate);
    const serial = (await t.storage.sshSessions.findById(ada.workspaceId, sessionId!))!.certificateSerial;
    expect((await endedBy(sessionId!))?.endedAt).toBeNull();
    await t.call(ada.caller, CertificateService.method.revokeCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      serial,
    });
    const ended = await endedBy(sessionId!);
    expect(ended).toMatchObject({
      endedBy: "system:SSH_CERTIFICATE_REVOKED",
      endReason: "access revoked: the certificate was revoked",
    });
    expect(terminateOf(sessionId!)).toEqual({
      kind: "terminate",
      sessionId,
      reason: "access revoked: the certificate was revoked",
    });
    const entry = await endEntry(sessionId!);
    expect(entry).toMatchObject({ actorType: "system" });
    expect(entry!.resourceName).toContain("as ubuntu on web-1 (ssh from 203.0.113.7:50022)");
    expect(entry!.resourceName).toContain("ended: access revoked: the certificate was revoked");
  });

  it("the member removed", async () => {
    const bob = await memberWithRole(t, ada.workspaceId, "editor");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [bob.caller.userId]);
    const { sessionId } = await begin(await certificateFor(bob.caller));
    await t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
      workspaceId: ada.workspaceId,
      userId: bob.caller.userId,
    });
    const ended = await endedBy(sessionId!);
    expect(ended?.endedAt).not.toBeNull();
    expect(ended?.endReason).toMatch(/^access revoked: /);
    expect(terminateOf(sessionId!)?.kind).toBe("terminate");
  });

  it("the grant removed", async () => {
    const { sessionId } = await begin(await certificateFor(ada.caller));
    const { principals } = await t.call(ada.caller, PrincipalService.method.listPrincipals, {
      workspaceId: ada.workspaceId,
      targetId: d.targetId,
      limit: 100,
      offset: 0,
    });
    const id = principals.find((p) => p.username === "ubuntu")!.id;
    await t.call(ada.caller, PrincipalService.method.removeSubjectsFromPrincipal, {
      workspaceId: ada.workspaceId,
      id,
      subjectIds: [ada.caller.userId],
      type: PrincipalType.USER,
    });
    expect((await endedBy(sessionId!))?.endReason).toBe(
      "access revoked: the grant to log in as 'ubuntu' was removed",
    );
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
  });

  it("the access request it was opened under withdrawn", async () => {
    const bob = await memberWithRole(t, ada.workspaceId, "editor");
    const { principals } = await t.call(ada.caller, PrincipalService.method.listPrincipals, {
      workspaceId: ada.workspaceId,
      targetId: d.targetId,
      limit: 100,
      offset: 0,
    });
    await t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
      workspaceId: ada.workspaceId,
      id: principals.find((p) => p.username === "ubuntu")!.id,
      subjectIds: [bob.caller.userId],
      type: PrincipalType.USER,
      kind: GrantKind.ON_REQUEST,
      approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["owner"] },
    });
    const { request } = await t.call(bob.caller, AccessRequestService.method.createAccessRequest, {
      workspaceId: ada.workspaceId,
      targetId: d.targetId,
      login: "ubuntu",
      duration: { seconds: 1800n, nanos: 0 },
      reason: "incident 42",
    });
    await t.call(ada.caller, AccessRequestService.method.approveAccessRequest, {
      workspaceId: ada.workspaceId,
      id: request!.id,
      reason: "",
    });
    // A certificate asked for the target while the request is approved is bound to it.
    const { line } = await subjectKey({ type: "ed25519" }, "bob@laptop");
    const { signedCertificate } = await t.call(bob.caller, CertificateService.method.signSSHCertificate, {
      workspaceId: ada.workspaceId,
      caId,
      type: SignSSHCertificateRequest_CertificateType.USER,
      publicKey: line,
      targetId: d.targetId,
    });
    const { sessionId } = await begin(signedCertificate);
    expect((await endedBy(sessionId!))?.endedAt).toBeNull();
    await t.call(ada.caller, AccessRequestService.method.withdrawAccessRequest, {
      workspaceId: ada.workspaceId,
      id: request!.id,
      reason: "done early",
    });
    const ended = await endedBy(sessionId!);
    expect(ended?.endedAt).not.toBeNull();
    expect(ended?.endReason).toMatch(/^access revoked: /);
    expect(terminateOf(sessionId!)?.kind).toBe("terminate");
    expect((await endEntry(sessionId!))?.resourceName).toContain("ended: access revoked: ");
  });

  it("the service account deleted", async () => {
    const robot = await serviceAccountCaller(t, ada, "editor");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.SERVICE_ACCOUNT, [robot.serviceAccountId]);
    const { sessionId } = await begin(await certificateFor(robot));
    expect((await t.storage.sshSessions.findById(ada.workspaceId, sessionId!))?.subjectType).toBe(
      "service_account",
    );
    await t.call(ada.caller, ServiceAccountService.method.deleteServiceAccount, {
      workspaceId: ada.workspaceId,
      id: robot.serviceAccountId,
    });
    const ended = await endedBy(sessionId!);
    expect(ended?.endedAt).not.toBeNull();
    expect(ended?.endReason).toMatch(/^access revoked: /);
  });

  it("an ended login stays ended: the agent's later report changes nothing", async () => {
    const { sessionId } = await begin(await certificateFor(ada.caller));
    await t.call(ada.caller, DaemonService.method.closeSession, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
      sessionId: sessionId!,
    });
    await callAsDaemon(t, d, DaemonService.method.endSSHSession, { sessionId: sessionId!, exitStatus: 0 });
    expect(await t.storage.sshSessions.findById(ada.workspaceId, sessionId!)).toMatchObject({
      endedBy: `user:${ada.caller.userId}`,
      endReason: expect.stringMatching(/^closed from the platform by /),
    });
    expect(terminateOf(sessionId!)?.kind).toBe("terminate");
  });
});

/**
 * Access requests: a member asks for a target's login under an on-request grant; approvers named
 * by the grant's policy approve (enough distinct ones) or deny; the request expires undecided after
 * the decision window; withdrawal ends access at once. Every transition is kept on the request
 * and audited; approvers hear of new requests on the workspace event stream and by mail.
 */
import { create } from "@bufbuild/protobuf";
import {
  AccessRequestEventType,
  AccessRequestService,
  AccessRequestState,
  GrantKind,
  PrincipalService,
  PrincipalType,
  TargetService,
  TeamService,
  WorkspaceService,
} from "@wap/api";
import { createMemoryMailer } from "@wap/test-kit/mail";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sweepAccessRequests } from "../src/access-requests/sweep.js";
import { createCallContext } from "../src/context.js";
import { principalMapOf } from "../src/daemons/sync.js";
import { memberWithRole, type Owner, type Person, sshAuthority } from "./support/access.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let mail: ReturnType<typeof createMemoryMailer>;
let ada: Owner;
let bob: Person;
let carol: Person;
let dave: Person;
let erin: Person;
let targetId = "";
let principalId = "";
const hour = 3600;

beforeEach(async () => {
  mail = createMemoryMailer();
  t = await createTestPlatform({
    mailer: mail.mailer,
    config: { publicBaseUrl: "https://app.example.test" },
  });
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  carol = await memberWithRole(t, ada.workspaceId, "admin");
  dave = await memberWithRole(t, ada.workspaceId, "admin");
  erin = await memberWithRole(t, ada.workspaceId, "editor");
  await sshAuthority(t, ada);
  targetId = (
    await t.call(ada.caller, TargetService.method.createTarget, {
      workspaceId: ada.workspaceId,
      name: "db-1",
    })
  ).target!.id;
  await t.call(ada.caller, PrincipalService.method.setPrincipals, {
    workspaceId: ada.workspaceId,
    targetId,
    usernames: ["ubuntu"],
  });
  principalId = (await t.storage.principals.listByTargets(ada.workspaceId, [targetId]))[0]!.id;
});
afterEach(() => t.platform.close());

const ws = () => ada.workspaceId;
const onRequest = (
  approval: Record<string, unknown> = {},
  subjectIds = [bob.caller.userId],
  type = PrincipalType.USER,
) =>
  t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ws(),
    id: principalId,
    subjectIds,
    type,
    kind: GrantKind.ON_REQUEST,
    approval: { maxDuration: { seconds: BigInt(hour), nanos: 0 }, approverRoles: ["admin"], ...approval },
  });
const ask = (who: Person = bob, extra: Record<string, unknown> = {}) =>
  t.call(who.caller, AccessRequestService.method.createAccessRequest, {
    workspaceId: ws(),
    targetId,
    login: "ubuntu",
    duration: { seconds: 1800n, nanos: 0 },
    reason: "incident 42",
    ...extra,
  });
const decide = (
  method: "approveAccessRequest" | "denyAccessRequest" | "withdrawAccessRequest",
  who: Person | Owner,
  id: string,
  reason = "",
) =>
  // The three methods take and answer the same shapes.
  t.call(
    who.caller,
    AccessRequestService.method[method] as typeof AccessRequestService.method.approveAccessRequest,
    {
      workspaceId: ws(),
      id,
      reason,
    },
  );
const logins = async () =>
  (await principalMapOf(t.storage, ws(), targetId, t.clock.now())).get("ubuntu") ?? [];
const list = async (who: Person | Owner) =>
  (await t.call(who.caller, AccessRequestService.method.listAccessRequests, { workspaceId: ws() })).requests;

describe("access requests", () => {
  it("an approval by another member lets the requester in for the duration, then no longer", async () => {
    await onRequest();
    const { request } = await ask();
    expect(request).toMatchObject({
      state: AccessRequestState.PENDING,
      requesterId: bob.caller.userId,
      reason: "incident 42",
      approvalsRequired: 1,
      events: [{ type: AccessRequestEventType.REQUESTED, actorId: bob.caller.userId, reason: "incident 42" }],
    });
    expect(await logins()).toEqual([]);
    t.clock.advance(1000);
    const { request: approved } = await decide("approveAccessRequest", carol, request!.id, "looks right");
    expect(approved).toMatchObject({
      state: AccessRequestState.APPROVED,
      approverIds: [carol.caller.userId],
      events: [
        { type: AccessRequestEventType.REQUESTED },
        { type: AccessRequestEventType.APPROVAL, actorId: carol.caller.userId, reason: "looks right" },
        { type: AccessRequestEventType.APPROVED, actorId: carol.caller.userId },
      ],
    });
    expect(Number(approved!.endsAt!.seconds) * 1000).toBe(t.clock.now().getTime() + 1_800_000);
    expect(await logins()).toEqual([bob.caller.userId]);
    t.clock.advance(1_800_000 - 1);
    expect(await logins()).toEqual([bob.caller.userId]);
    t.clock.advance(1);
    expect(await logins()).toEqual([]);
    const { request: ended } = await t.call(bob.caller, AccessRequestService.method.getAccessRequest, {
      workspaceId: ws(),
      id: request!.id,
    });
    expect(ended?.state).toBe(AccessRequestState.ENDED);
    const actions = (await t.storage.auditEvents.list(ws(), { limit: 100, offset: 0 })).items.map(
      (e) => e.action,
    );
    expect(actions).toEqual(
      expect.arrayContaining(["access_request.create", "access_request.approval", "access_request.approve"]),
    );
  });

  it("nobody approves their own request, a person counts once, and two approvals need two people", async () => {
    await onRequest({ approverRoles: ["admin", "viewer"], approvalsRequired: 2 });
    const { request } = await ask();
    const self = await expectCode(decide("approveAccessRequest", bob, request!.id), "permission_denied");
    expect(self.reason).toBe("SELF_APPROVAL");
    const first = await decide("approveAccessRequest", carol, request!.id);
    expect(first.request?.state).toBe(AccessRequestState.PENDING);
    const twice = await expectCode(decide("approveAccessRequest", carol, request!.id), "failed_precondition");
    expect(twice.reason).toBe("ALREADY_APPROVED_BY_CALLER");
    expect(await logins()).toEqual([]);
    const second = await decide("approveAccessRequest", dave, request!.id);
    expect(second.request).toMatchObject({
      state: AccessRequestState.APPROVED,
      approverIds: [carol.caller.userId, dave.caller.userId],
    });
    expect(await logins()).toEqual([bob.caller.userId]);
    // Decided: neither approved again nor denied.
    const again = await expectCode(decide("denyAccessRequest", ada, request!.id), "permission_denied");
    expect(again.reason).toBe("NOT_AN_APPROVER");
    const late = await expectCode(decide("denyAccessRequest", carol, request!.id), "failed_precondition");
    expect(late.reason).toBe("ACCESS_REQUEST_DECIDED");
  });

  it("tells each caller what they may do with a request, as the decisions and withdrawal then answer", async () => {
    await onRequest({ approverRoles: ["editor"], approvalsRequired: 2 });
    const { request } = await ask();
    const id = request!.id;
    const get = async (who: Person | Owner) =>
      (await t.call(who.caller, AccessRequestService.method.getAccessRequest, { workspaceId: ws(), id }))
        .request!;
    const rights = async (who: Person | Owner) => {
      const r = await get(who);
      const listed = (await list(who)).find((l) => l.id === id)!;
      // The list and the single answer agree.
      expect([listed.callerMayDecide, listed.callerMayWithdraw]).toEqual([
        r.callerMayDecide,
        r.callerMayWithdraw,
      ]);
      return { decide: r.callerMayDecide, withdraw: r.callerMayWithdraw };
    };
    // The requester withdraws but never decides; the editor (named by the policy) does both;
    // an admin not named by the policy withdraws only.
    expect(request).toMatchObject({ callerMayDecide: false, callerMayWithdraw: true });
    expect(await rights(bob)).toEqual({ decide: false, withdraw: true });
    expect(await rights(erin)).toEqual({ decide: true, withdraw: true });
    expect(await rights(carol)).toEqual({ decide: false, withdraw: true });
    expect((await expectCode(decide("approveAccessRequest", carol, id), "permission_denied")).reason).toBe(
      "NOT_AN_APPROVER",
    );
    const { request: once } = await decide("approveAccessRequest", erin, id);
    // Approved once by erin: erin may not approve again.
    expect(once).toMatchObject({ state: AccessRequestState.PENDING, callerMayDecide: false });
    expect(await rights(erin)).toEqual({ decide: false, withdraw: true });
    const { request: withdrawn } = await decide("withdrawAccessRequest", carol, id, "not needed");
    expect(withdrawn).toMatchObject({ state: AccessRequestState.WITHDRAWN, callerMayWithdraw: false });
    for (const who of [ada, bob, carol, erin])
      expect(await rights(who)).toEqual({ decide: false, withdraw: false });
  });

  it("only approvers named by the policy decide: a role, or a team", async () => {
    const oncall = (
      await t.call(ada.caller, TeamService.method.createTeam, { workspaceId: ws(), name: "oncall" })
    ).team!;
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ws(),
      teamId: oncall.id,
      userId: erin.caller.userId,
    });
    await onRequest({ approverRoles: [], approverTeamIds: [oncall.id] });
    const { request } = await ask();
    const admin = await expectCode(decide("approveAccessRequest", carol, request!.id), "permission_denied");
    expect(admin.reason).toBe("NOT_AN_APPROVER");
    const { request: denied } = await decide("denyAccessRequest", erin, request!.id, "not now");
    expect(denied).toMatchObject({
      state: AccessRequestState.DENIED,
      events: [{}, { type: AccessRequestEventType.DENIED, actorId: erin.caller.userId, reason: "not now" }],
    });
    expect(await logins()).toEqual([]);
  });

  it("a request not decided within its window expires and cannot then be approved", async () => {
    await onRequest();
    const { request } = await ask();
    t.clock.advance(hour * 1000);
    const late = await expectCode(decide("approveAccessRequest", carol, request!.id), "failed_precondition");
    expect(late.reason).toBe("ACCESS_REQUEST_EXPIRED");
    expect((await list(bob))[0]?.state).toBe(AccessRequestState.EXPIRED);
    expect(await logins()).toEqual([]);
  });

  it("the decision window is a setting", async () => {
    await t.platform.close();
    t = await createTestPlatform({ config: { accessRequestDecisionSeconds: 60 } });
    ada = await t.owner();
    bob = await memberWithRole(t, ada.workspaceId, "viewer");
    carol = await memberWithRole(t, ada.workspaceId, "admin");
    await sshAuthority(t, ada);
    targetId = (
      await t.call(ada.caller, TargetService.method.createTarget, { workspaceId: ws(), name: "db-2" })
    ).target!.id;
    await t.call(ada.caller, PrincipalService.method.setPrincipals, {
      workspaceId: ws(),
      targetId,
      usernames: ["ubuntu"],
    });
    principalId = (await t.storage.principals.listByTargets(ws(), [targetId]))[0]!.id;
    await onRequest();
    const { request } = await ask();
    expect(Number(request!.decideBy!.seconds - request!.createdAt!.seconds)).toBe(60);
    t.clock.advance(60_000);
    expect(
      (await expectCode(decide("approveAccessRequest", carol, request!.id), "failed_precondition")).reason,
    ).toBe("ACCESS_REQUEST_EXPIRED");
  });

  it("withdrawal of an approved request ends its access at once; a withdrawn request is decided", async () => {
    await onRequest();
    const { request } = await ask();
    await decide("approveAccessRequest", carol, request!.id);
    expect(await logins()).toEqual([bob.caller.userId]);
    const { request: withdrawn } = await decide("withdrawAccessRequest", dave, request!.id, "done early");
    expect(withdrawn?.events.at(-1)).toMatchObject({
      type: AccessRequestEventType.WITHDRAWN,
      actorId: dave.caller.userId,
      reason: "done early",
    });
    expect(withdrawn?.state).toBe(AccessRequestState.WITHDRAWN);
    expect(await logins()).toEqual([]);
    const again = await expectCode(decide("withdrawAccessRequest", bob, request!.id), "failed_precondition");
    expect(again.reason).toBe("ACCESS_REQUEST_DECIDED");
  });

  it("the requester withdraws their own pending request; a stranger cannot see it", async () => {
    await onRequest();
    const { request } = await ask();
    const stranger = await memberWithRole(t, ws(), "viewer");
    const hidden = await expectCode(decide("withdrawAccessRequest", stranger, request!.id), "not_found");
    expect(hidden.reason).toBe("ACCESS_REQUEST_NOT_FOUND");
    expect(await list(stranger)).toEqual([]);
    await decide("withdrawAccessRequest", bob, request!.id);
    expect((await list(carol)).map((r) => r.state)).toEqual([AccessRequestState.WITHDRAWN]);
  });

  it("lists the caller's own requests and those they may decide, newest first, filtered by state", async () => {
    await onRequest({}, [bob.caller.userId, erin.caller.userId]);
    const { request: first } = await ask(bob);
    t.clock.advance(1000);
    const { request: second } = await ask(erin);
    expect((await list(bob)).map((r) => r.id)).toEqual([first!.id]);
    expect((await list(carol)).map((r) => r.id)).toEqual([second!.id, first!.id]);
    await decide("denyAccessRequest", carol, first!.id);
    const pending = await t.call(carol.caller, AccessRequestService.method.listAccessRequests, {
      workspaceId: ws(),
      state: AccessRequestState.PENDING,
    });
    expect(pending.requests.map((r) => r.id)).toEqual([second!.id]);
    expect(pending.total).toBe(1);
  });

  it("refuses requests without an on-request grant, beyond the maximum duration, or without a required reason", async () => {
    const none = await expectCode(ask(), "permission_denied");
    expect(none.reason).toBe("NO_REQUESTABLE_GRANT");
    await onRequest({ reasonRequired: true });
    const long = await expectCode(
      ask(bob, { duration: { seconds: BigInt(hour + 1), nanos: 0 } }),
      "invalid_argument",
    );
    expect(long.violations.map((v) => v.field)).toEqual(["duration"]);
    const silent = await expectCode(ask(bob, { reason: "  " }), "invalid_argument");
    expect(silent.violations.map((v) => v.field)).toEqual(["reason"]);
    const unknown = await expectCode(ask(bob, { login: "root" }), "permission_denied");
    expect(unknown.reason).toBe("NO_REQUESTABLE_GRANT");
    expect(await list(bob)).toEqual([]);
  });

  it("refuses a request from one who may log in already", async () => {
    await t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
      workspaceId: ws(),
      id: principalId,
      subjectIds: [bob.caller.userId],
      type: PrincipalType.USER,
    });
    expect((await expectCode(ask(), "failed_precondition")).reason).toBe("ACCESS_REQUEST_NOT_NEEDED");
  });

  it("a team's on-request grant lets its members ask", async () => {
    const team = (
      await t.call(ada.caller, TeamService.method.createTeam, { workspaceId: ws(), name: "devs" })
    ).team!;
    await t.call(ada.caller, TeamService.method.addTeamMember, {
      workspaceId: ws(),
      teamId: team.id,
      userId: bob.caller.userId,
    });
    await onRequest({ approvalsRequired: 1 }, [team.id], PrincipalType.TEAM);
    const { request } = await ask();
    await decide("approveAccessRequest", carol, request!.id);
    expect(await logins()).toEqual([bob.caller.userId]);
  });

  it("accepts a duration from 60 s up to the grant's maximum, on both sides of each bound", async () => {
    await onRequest();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 * hour }), async (seconds) => {
        const call = ask(bob, { duration: { seconds: BigInt(seconds), nanos: 0 } });
        if (seconds >= 60 && seconds <= hour) {
          const { request } = await call;
          await decide("withdrawAccessRequest", bob, request!.id);
        } else {
          const error = await expectCode(call, "invalid_argument");
          expect(error.violations.map((v) => v.field)).toEqual(["duration"]);
        }
      }),
      { numRuns: 40, examples: [[59], [60], [hour], [hour + 1]] },
    );
  });

  it("tells approvers on the workspace event stream and by mail", async () => {
    await onRequest();
    const controller = new AbortController();
    const stream = t.platform
      .stream(
        WorkspaceService.method.subscribeWorkspaceEvents,
        createCallContext(carol.caller, { signal: controller.signal }),
        create(WorkspaceService.method.subscribeWorkspaceEvents.input, { workspaceId: ws() }),
      )
      [Symbol.asyncIterator]();
    const first = stream.next();
    const { request } = await ask();
    const event = await first;
    expect(event.value).toMatchObject({ type: "access_request.create" });
    expect(JSON.parse(event.value!.payloadJson!)).toMatchObject({
      resource: `access_request:${request!.id}`,
    });
    controller.abort();
    const asks = (to: string) =>
      mail.sent.filter((m) => m.to === to && m.subject.includes("asks for access"));
    const [mailed] = asks(carol.email);
    expect(mailed?.text).toContain("incident 42");
    expect(mailed?.text).toContain(`request=${request!.id}`);
    expect(asks(dave.email)).toHaveLength(1);
    expect(asks(bob.email)).toEqual([]);
  });

  it("the sweep records expiry and the end of the window on the request and in the audit log, once", async () => {
    await onRequest();
    const { request: undecided } = await ask();
    const { request: granted } = await ask(bob, { duration: { seconds: 60n, nanos: 0 } });
    await decide("approveAccessRequest", carol, granted!.id);
    expect(await sweepAccessRequests(t.platform.services)).toBe(0);
    t.clock.advance(60_000);
    expect(await sweepAccessRequests(t.platform.services)).toBe(1);
    t.clock.advance(hour * 1000);
    expect(await sweepAccessRequests(t.platform.services)).toBe(1);
    expect(await sweepAccessRequests(t.platform.services)).toBe(0);
    const byId = new Map((await list(bob)).map((r) => [r.id, r]));
    expect(byId.get(granted!.id)?.events.at(-1)).toMatchObject({
      type: AccessRequestEventType.ENDED,
      actorId: "",
    });
    expect(byId.get(undecided!.id)).toMatchObject({
      state: AccessRequestState.EXPIRED,
      events: [
        { type: AccessRequestEventType.REQUESTED },
        { type: AccessRequestEventType.EXPIRED, actorId: "" },
      ],
    });
    const system = (await t.storage.auditEvents.list(ws(), { limit: 100, offset: 0 })).items
      .filter((e) => e.actorType === "system")
      .map((e) => [e.action, e.resource]);
    expect(system.sort()).toEqual(
      [
        ["access_request.end", `access_request:${granted!.id}`],
        ["access_request.expire", `access_request:${undecided!.id}`],
      ].sort(),
    );
  });
});

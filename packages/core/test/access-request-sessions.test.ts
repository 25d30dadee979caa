/**
 * Terminal sessions under an access request: the requester opens one only while approved, and
 * the check a live browser terminal repeats after every workspace event (and every minute) fails
 * once the request is withdrawn or its window has passed; both are workspace events, so open
 * terminals are checked at once.
 */
import { AccessRequestService, DaemonService, GrantKind, PrincipalService, PrincipalType } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sweepAccessRequests } from "../src/access-requests/sweep.js";
import type { EventPayload } from "../src/events/event-bus.js";
import { workspaceTopic } from "../src/events/workspace-events.js";
import { recheckSessionAccess } from "../src/sessions/lifecycle.js";
import { memberWithRole, type Owner, type Person } from "./support/access.js";
import { callAsDaemon, type TestDaemon, terminalReadyDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let bob: Person;
let carol: Person;
let d: TestDaemon;
let events: EventPayload[];

beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  bob = await memberWithRole(t, ada.workspaceId, "viewer");
  carol = await memberWithRole(t, ada.workspaceId, "admin");
  ({ daemon: d } = await terminalReadyDaemon(t, ada, "jit-1"));
  const [principal] = await t.storage.principals.listByTargets(ada.workspaceId, [d.targetId]);
  await t.call(ada.caller, PrincipalService.method.addSubjectsToPrincipal, {
    workspaceId: ada.workspaceId,
    id: principal!.id,
    subjectIds: [bob.caller.userId],
    type: PrincipalType.USER,
    kind: GrantKind.ON_REQUEST,
    approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["admin"] },
  });
  events = [];
  await t.platform.services.events.subscribe(workspaceTopic(ada.workspaceId), (e) => events.push(e));
});
afterEach(() => t.platform.close());

/** Bob's request, approved by Carol, and the daemon synced (as when it is told to). */
async function approved(seconds = 600) {
  const { request } = await t.call(bob.caller, AccessRequestService.method.createAccessRequest, {
    workspaceId: ada.workspaceId,
    targetId: d.targetId,
    login: "ubuntu",
    duration: { seconds: BigInt(seconds), nanos: 0 },
    reason: "on call",
  });
  await t.call(carol.caller, AccessRequestService.method.approveAccessRequest, {
    workspaceId: ada.workspaceId,
    id: request!.id,
  });
  await callAsDaemon(t, d, DaemonService.method.syncDaemon, {
    users: ["ubuntu"],
    privateIps: [],
    metadata: {},
  });
  return request!.id;
}

const openSession = async () =>
  (
    await t.call(bob.caller, DaemonService.method.createSession, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
      username: "ubuntu",
    })
  ).session!.sessionId;

/** Lets the events published after a commit arrive. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("terminal sessions under an access request", () => {
  it("cannot be opened before approval", async () => {
    const refused = await expectCode(openSession(), "permission_denied");
    expect(refused.reason).toBe("NO_LOGIN_GRANT");
  });

  it("end at the next check once the request is withdrawn, which the withdrawal's event triggers", async () => {
    const id = await approved();
    const session = await openSession();
    await recheckSessionAccess(t.platform.services, bob.caller, ada.workspaceId, session);
    await t.call(carol.caller, AccessRequestService.method.withdrawAccessRequest, {
      workspaceId: ada.workspaceId,
      id,
      reason: "incident over",
    });
    await settle();
    expect(events.map((e) => (e as { type: string }).type)).toContain("access_request.withdraw");
    const ended = await expectCode(
      recheckSessionAccess(t.platform.services, bob.caller, ada.workspaceId, session),
      "permission_denied",
    );
    expect(ended.reason).toBe("NO_LOGIN_GRANT");
  });

  it("end at the next check once the window has passed; the sweep's event triggers it", async () => {
    await approved(60);
    const session = await openSession();
    t.clock.advance(60_000);
    // The open session fails its check (the unattached one has also timed out by now), and a
    // new one is refused for want of a grant.
    await expect(
      recheckSessionAccess(t.platform.services, bob.caller, ada.workspaceId, session),
    ).rejects.toThrow();
    expect((await expectCode(openSession(), "permission_denied")).reason).toBe("NO_LOGIN_GRANT");
    expect(await sweepAccessRequests(t.platform.services)).toBe(1);
    await settle();
    expect(events.map((e) => (e as { type: string }).type)).toContain("access_request.end");
  });
});

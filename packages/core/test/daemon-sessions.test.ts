/**
 * Terminal sessions and the control stream's open and close:
 * CreateSession's checks, the pending session registered before the push, `ready` matched to
 * its session and daemon, abandonment, ListSessions, CloseSession and the relay's close events.
 */

import {
  DaemonService,
  DaemonStatus,
  Notification_EventType,
  PrincipalType,
  WorkspaceService,
} from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonCaller } from "../src/context.js";
import { closeControlStream, openControlStream } from "../src/daemons/control.js";
import { daemonTopic, parseDaemonEvent, sessionTopic } from "../src/daemons/events.js";
import type { EventPayload } from "../src/events/event-bus.js";
import {
  abandonStaleSessions,
  attachSession,
  claimSession,
  endSession,
  recheckSessionAccess,
  sessionReadyTimeoutSeconds,
} from "../src/sessions/lifecycle.js";
import { maxLiveSessionsPerDaemon } from "../src/sessions/operations.js";
import { memberWithRole, type Owner, type Person } from "./support/access.js";
import { callAsDaemon, enrolledDaemon, grantLogin, type TestDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let d: TestDaemon;
let self: DaemonCaller;
let pushes: EventPayload[];
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  d = await enrolledDaemon(t, ada, "web-1");
  self = { kind: "daemon", daemonId: d.id, workspaceId: ada.workspaceId };
  pushes = await capture(daemonTopic(d.id));
  await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [ada.caller.userId]);
  await setStatus(DaemonStatus.ACCEPTED);
  await openControlStream(t.platform.services, self, "instance-1/stream-1");
  await sync();
  pushes.length = 0;
});
afterEach(() => t.platform.close());

/** Everything published on `topic` from now on. */
async function capture(topic: string): Promise<EventPayload[]> {
  const seen: EventPayload[] = [];
  await t.platform.services.events.subscribe(topic, (payload) => seen.push(payload));
  return seen;
}
/** Every event of the calls answered so far, delivered. */
const settle = () => t.platform.drain();
const sync = () =>
  callAsDaemon(t, d, DaemonService.method.syncDaemon, { users: ["ubuntu"], privateIps: [], metadata: {} });
const setStatus = (status: DaemonStatus) =>
  t.call(ada.caller, DaemonService.method.updateDaemon, { workspaceId: ada.workspaceId, id: d.id, status });
const create = (caller: Owner["caller"] | Person["caller"] = ada.caller, username = "ubuntu") =>
  t.call(caller, DaemonService.method.createSession, {
    workspaceId: ada.workspaceId,
    daemonId: d.id,
    username,
  });
const ready = (sessionId: string, overrides: Partial<{ username: string; userId: string }> = {}) =>
  claimSession(t.platform.services, self, {
    sessionId,
    username: overrides.username ?? "ubuntu",
    userId: overrides.userId ?? ada.caller.userId,
  });

describe("CreateSession", () => {
  it("registers the pending session, then pushes it on the daemon's topic", async () => {
    let storedWhenPushed: unknown;
    await t.platform.services.events.subscribe(daemonTopic(d.id), (payload) => {
      const event = parseDaemonEvent(payload);
      if (event?.kind === "session") {
        storedWhenPushed = t.storage.daemonSessions.findById(ada.workspaceId, event.sessionId);
      }
    });
    const res = await create();
    expect(res.daemonName).toBe("web-1");
    expect(res.session).toMatchObject({ username: "ubuntu", userId: ada.caller.userId });
    await settle();
    expect(pushes).toEqual([
      { kind: "session", sessionId: res.session!.sessionId, username: "ubuntu", userId: ada.caller.userId },
    ]);
    expect(await storedWhenPushed).toMatchObject({ state: "pending", daemonId: d.id });
  });

  it("needs an accepted daemon with an open control stream", async () => {
    await setStatus(DaemonStatus.REJECTED);
    await expectCode(create(), "failed_precondition");
    await setStatus(DaemonStatus.ACCEPTED);
    await closeControlStream(t.platform.services, self, "instance-1/stream-1");
    const offline = await expectCode(create(), "failed_precondition");
    expect(offline.reason).toBe("DAEMON_OFFLINE");
    await expectCode(
      t.call(ada.caller, DaemonService.method.createSession, {
        workspaceId: ada.workspaceId,
        daemonId: crypto.randomUUID(),
        username: "ubuntu",
      }),
      "not_found",
    );
  });

  it("needs a grant for that username, whatever the role; waits for the daemon to know it", async () => {
    await expectCode(create(ada.caller, "root"), "permission_denied");
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    await expectCode(create(vic.caller), "permission_denied");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [vic.caller.userId]);
    await settle();
    pushes.length = 0;
    // Granted after the daemon's last sync (its PRINCIPALS may be lost in the daemon's one-slot
    // queue): it would drop the session, so it is asked to sync again.
    const waiting = await expectCode(create(vic.caller), "unavailable");
    expect(waiting.reason).toBe("DAEMON_SYNC_PENDING");
    await settle();
    expect(pushes).toEqual([{ kind: "notification", eventType: "PRINCIPALS" }]);
    await sync();
    const res = await create(vic.caller);
    expect(res.session?.userId).toBe(vic.caller.userId);
    const bob = await t.owner();
    await expectCode(
      t.call(bob.caller, DaemonService.method.createSession, {
        workspaceId: ada.workspaceId,
        daemonId: d.id,
        username: "ubuntu",
      }),
      "not_found",
    );
  });

  it(`refuses more than ${maxLiveSessionsPerDaemon} live sessions on one daemon`, async () => {
    for (let i = 0; i < maxLiveSessionsPerDaemon; i++) {
      await t.storage.daemonSessions.insert({
        id: crypto.randomUUID(),
        workspaceId: ada.workspaceId,
        daemonId: d.id,
        userId: ada.caller.userId,
        username: "ubuntu",
        state: i % 2 === 0 ? "pending" : "open",
        createdAt: t.clock.now(),
        openedAt: null,
        closedAt: null,
        closeReason: "",
      });
    }
    await expectCode(create(), "resource_exhausted");
    // Stale pending sessions no longer count.
    t.clock.advance((sessionReadyTimeoutSeconds + 1) * 1000);
    await create();
  });
});

describe("the session stream's ready", () => {
  it("opens the session for its daemon once; other daemons, stale and repeated claims are not_found", async () => {
    const { session } = await create();
    const id = session!.sessionId;
    const other: DaemonCaller = {
      kind: "daemon",
      daemonId: crypto.randomUUID(),
      workspaceId: ada.workspaceId,
    };
    await expectCode(
      claimSession(t.platform.services, other, {
        sessionId: id,
        username: "ubuntu",
        userId: ada.caller.userId,
      }),
      "not_found",
    );
    const opened = await ready(id.toUpperCase());
    expect(opened).toMatchObject({ id, state: "open", openedAt: t.clock.now() });
    await expectCode(ready(id), "not_found");
    await expectCode(ready("not-a-uuid"), "not_found");

    const late = (await create()).session!.sessionId;
    t.clock.advance(sessionReadyTimeoutSeconds * 1000 + 1);
    await expectCode(ready(late), "not_found");
  });

  it("closes a session whose ready names someone else", async () => {
    const { session } = await create();
    const closes = await capture(sessionTopic(session!.sessionId));
    await expectCode(ready(session!.sessionId, { username: "root" }), "permission_denied");
    await settle();
    expect(closes).toEqual([expect.objectContaining({ kind: "close", sessionId: session!.sessionId })]);
    expect((await t.storage.daemonSessions.findById(ada.workspaceId, session!.sessionId))?.state).toBe(
      "closed",
    );
  });

  it("abandons sessions never claimed: lazily, and by the sweep with a close event", async () => {
    const { session } = await create();
    const closes = await capture(sessionTopic(session!.sessionId));
    expect(await abandonStaleSessions(t.platform.services)).toBe(0);
    t.clock.advance(sessionReadyTimeoutSeconds * 1000 + 1);
    const { sessions } = await t.call(ada.caller, DaemonService.method.listSessions, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
    });
    expect(sessions).toEqual([]);
    expect(await abandonStaleSessions(t.platform.services)).toBe(1);
    await settle();
    expect(closes).toEqual([{ kind: "close", sessionId: session!.sessionId, reason: expect.any(String) }]);
    const stored = await t.storage.daemonSessions.findById(ada.workspaceId, session!.sessionId);
    expect(stored).toMatchObject({ state: "closed", closeReason: expect.stringMatching(/in time/) });
  });
});

describe("ListSessions and CloseSession", () => {
  it("lists the live sessions of a daemon with its name", async () => {
    const a = (await create()).session!.sessionId;
    t.clock.advance(1);
    const b = (await create()).session!.sessionId;
    await ready(b);
    const c = (await create()).session!.sessionId;
    await endSession(t.platform.services, ada.workspaceId, c, "exited");
    const viewer = await memberWithRole(t, ada.workspaceId, "viewer");
    const res = await t.call(viewer.caller, DaemonService.method.listSessions, {
      workspaceId: ada.workspaceId,
      daemonId: d.id,
    });
    expect(res.daemonName).toBe("web-1");
    expect(res.sessions.map((s) => s.sessionId)).toEqual([a, b]);
  });

  it("closes one's own session, others' with sessions.manage, and tells the relay", async () => {
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [vic.caller.userId]);
    await sync();
    const mine = (await create(vic.caller)).session!.sessionId;
    const adas = (await create()).session!.sessionId;
    const closes = await capture(sessionTopic(mine));
    const close = (caller: Person["caller"], sessionId: string, daemonId = d.id) =>
      t.call(caller, DaemonService.method.closeSession, {
        workspaceId: ada.workspaceId,
        daemonId,
        sessionId,
      });
    await expectCode(close(vic.caller, adas), "permission_denied");
    await expectCode(close(vic.caller, mine, crypto.randomUUID()), "not_found");
    await close(vic.caller, mine);
    await close(vic.caller, mine);
    await settle();
    expect(closes).toEqual([{ kind: "close", sessionId: mine, reason: "closed from the platform" }]);
    await close(ada.caller, adas);
    expect((await t.storage.daemonSessions.findById(ada.workspaceId, adas))?.state).toBe("closed");
  });

  it("lets only the session's own subject attach, while it is live", async () => {
    const id = (await create()).session!.sessionId;
    expect((await attachSession(t.platform.services, ada.caller, ada.workspaceId, id)).id).toBe(id);
    const vic = await memberWithRole(t, ada.workspaceId, "admin");
    await expectCode(attachSession(t.platform.services, vic.caller, ada.workspaceId, id), "not_found");
    await expectCode(attachSession(t.platform.services, self, ada.workspaceId, id), "unauthenticated");
    await endSession(t.platform.services, ada.workspaceId, id, "exited");
    await expectCode(attachSession(t.platform.services, ada.caller, ada.workspaceId, id), "not_found");
  });

  it("says, when a live terminal's person was removed from the workspace, that they are no longer a member", async () => {
    const vic = await memberWithRole(t, ada.workspaceId, "viewer");
    await grantLogin(t, ada, d.targetId, "ubuntu", PrincipalType.USER, [vic.caller.userId]);
    await sync();
    const id = (await create(vic.caller)).session!.sessionId;
    await recheckSessionAccess(t.platform.services, vic.caller, ada.workspaceId, id);
    await t.call(ada.caller, WorkspaceService.method.removeWorkspaceMember, {
      workspaceId: ada.workspaceId,
      userId: vic.caller.userId,
    });
    const refused = await expectCode(
      recheckSessionAccess(t.platform.services, vic.caller, ada.workspaceId, id),
      "permission_denied",
    );
    expect(refused.message).toBe("you are no longer a member of this workspace");
  });
});

describe("the control stream", () => {
  it("online exactly while a stream is held, on any instance", async () => {
    const online = async () =>
      (await t.call(ada.caller, DaemonService.method.getDaemon, { workspaceId: ada.workspaceId, id: d.id }))
        .daemon?.online;
    expect(await online()).toBe(true);
    // Reconnected elsewhere before the first instance noticed the old stream closed.
    await openControlStream(t.platform.services, self, "instance-2/stream-9");
    await closeControlStream(t.platform.services, self, "instance-1/stream-1");
    expect(await online()).toBe(true);
    expect(await t.storage.daemons.onlineHolder(d.id)).toBe("instance-2/stream-9");
    await closeControlStream(t.platform.services, self, "instance-2/stream-9");
    expect(await online()).toBe(false);
  });

  it("greets a rejected daemon with STATUS REJECTED on every connection", async () => {
    let { greeting } = await openControlStream(t.platform.services, self, "instance-1/stream-2");
    expect(greeting).toEqual([]);
    await setStatus(DaemonStatus.REJECTED);
    for (const stream of ["stream-3", "stream-4"]) {
      ({ greeting } = await openControlStream(t.platform.services, self, `instance-1/${stream}`));
      expect(greeting).toEqual([
        {
          msg: {
            case: "notification",
            value: {
              eventType: Notification_EventType.STATUS,
              daemonId: d.id,
              status: DaemonStatus.REJECTED,
            },
          },
        },
      ]);
    }
    await t.call(ada.caller, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: d.id });
    await expectCode(openControlStream(t.platform.services, self, "instance-1/stream-5"), "unauthenticated");
  });
});

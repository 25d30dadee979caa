/**
 * Where a terminal session is relayed (docs/sessions.md, "Across instances"): the claim records
 * the instance holding the daemon's stream, a browser reads it with `sessionRelayOf`, and the
 * sweep closes sessions whose relaying instance lost its lease.
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonCaller } from "../src/context.js";
import { sessionTopic } from "../src/daemons/events.js";
import type { EventPayload } from "../src/events/event-bus.js";
import {
  abandonStaleSessions,
  claimSession,
  endSession,
  orphanedReason,
  sessionRelayOf,
} from "../src/sessions/lifecycle.js";
import type { Owner } from "./support/access.js";
import { createdSession, type TestDaemon, terminalReadyDaemon } from "./support/daemons.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let d: TestDaemon;
let self: DaemonCaller;
beforeEach(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  ({ daemon: d, self } = await terminalReadyDaemon(t, ada, "relay-host"));
});
afterEach(() => t.platform.close());

const instanceA = { instanceId: "instance-a", url: "http://10.0.0.5:8080" };

const created = () => createdSession(t, ada, d);

const ready = (sessionId: string) => ({ sessionId, username: "ubuntu", userId: ada.caller.userId });
const leaseFor = (instanceId: string, seconds: number) =>
  t.storage.daemons.renewInstanceLease(
    instanceId,
    new Date(t.clock.now().getTime() + seconds * 1000),
    t.clock.now(),
  );

describe("sessionRelayOf", () => {
  it("is pending until claimed, then open and relayed by the claiming instance, then closed with the reason", async () => {
    const id = await created();
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, id)).toEqual({ kind: "pending" });
    await claimSession(t.platform.services, self, ready(id), instanceA);
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, id)).toEqual({
      kind: "open",
      relay: instanceA,
    });
    await endSession(t.platform.services, ada.workspaceId, id, "the terminal was closed in the browser");
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, id)).toEqual({
      kind: "closed",
      reason: "the terminal was closed in the browser",
    });
  });

  it("calls a pending session past the ready timeout over before the sweep does", async () => {
    const id = await created();
    t.clock.advance(31_000);
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, id)).toEqual({
      kind: "closed",
      reason: "the daemon did not open the session in time",
    });
  });

  it("knows no relay for a session claimed without one, nor any session of another workspace", async () => {
    const id = await created();
    await claimSession(t.platform.services, self, ready(id));
    expect((await sessionRelayOf(t.platform.services, ada.workspaceId, id)).kind).toBe("closed");
    const bob = await t.owner();
    expect((await sessionRelayOf(t.platform.services, bob.workspaceId, id)).kind).toBe("closed");
  });
});

describe("abandonStaleSessions", () => {
  it("closes open sessions whose relaying instance has no live lease, and tells their relays", async () => {
    await leaseFor("instance-a", 30);
    const kept = await created();
    const orphan = await created();
    await claimSession(t.platform.services, self, ready(kept), instanceA);
    await claimSession(t.platform.services, self, ready(orphan), {
      instanceId: "instance-gone",
      url: "http://x",
    });
    const heard: EventPayload[] = [];
    await t.platform.services.events.subscribe(sessionTopic(orphan), (payload) => heard.push(payload));

    expect(await abandonStaleSessions(t.platform.services)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(heard).toEqual([{ kind: "close", sessionId: orphan, reason: orphanedReason }]);
    expect((await t.storage.daemonSessions.findById(ada.workspaceId, kept))?.state).toBe("open");

    // instance-a stops renewing: once its lease has lapsed its session goes too.
    t.clock.advance(31_000);
    expect(await abandonStaleSessions(t.platform.services)).toBe(1);
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, kept)).toEqual({
      kind: "closed",
      reason: orphanedReason,
    });
  });
});

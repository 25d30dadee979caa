/**
 * The storage contract of daemon sessions: claimed, closed and abandoned once each; relays and
 * orphans. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  aDaemon,
  aDaemonSession,
  type ContractContext,
  concurrency,
  daemonAt,
  expectUnique,
  seedDaemon,
  uid,
} from "./fixtures.js";

export function runDaemonSessionContract(ctx: ContractContext): void {
  sessionLifecycle(ctx);
}

function sessionLifecycle(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = daemonAt;

  describe("daemon sessions", () => {
    test("daemonSessions: every field round-trips; another workspace's id finds nothing", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = await seedWorkspace();
      const pending = aDaemonSession(workspace.id, daemon.id);
      const closed = aDaemonSession(workspace.id, daemon.id, {
        state: "closed",
        createdAt: at(11, 1),
        openedAt: at(12, 2),
        closedAt: at(13, 3),
        closeReason: "closed by ünïcødé",
      });
      await storage.daemonSessions.insert(pending);
      await storage.daemonSessions.insert(closed);
      expect(await storage.daemonSessions.findById(workspace.id, pending.id)).toEqual(pending);
      expect(await storage.daemonSessions.findById(workspace.id, closed.id)).toEqual(closed);
      expect(await storage.daemonSessions.findById(other.workspace.id, pending.id)).toBeNull();
      expect(await storage.daemonSessions.findById(workspace.id, uid())).toBeNull();
      await expectUnique(storage.daemonSessions.insert({ ...pending }), "daemon_sessions.id");
      expect(await storage.daemonSessions.listByDaemon(other.workspace.id, daemon.id, ["pending"])).toEqual(
        [],
      );
      expect(await storage.daemonSessions.close(other.workspace.id, pending.id, "x", at(14))).toBeNull();
    });

    test("daemonSessions: listByDaemon filters by state, oldest first", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const older = aDaemonSession(workspace.id, daemon.id, { createdAt: at(1) });
      const newer = aDaemonSession(workspace.id, daemon.id, {
        createdAt: at(2),
        state: "open",
        openedAt: at(3),
      });
      const done = aDaemonSession(workspace.id, daemon.id, {
        createdAt: at(0),
        state: "closed",
        closedAt: at(4),
      });
      const elsewhere = aDaemonSession(workspace.id, other.id);
      for (const s of [newer, done, older, elsewhere]) await storage.daemonSessions.insert(s);
      const ids = async (states: ("pending" | "open" | "closed")[]) =>
        (await storage.daemonSessions.listByDaemon(workspace.id, daemon.id, states)).map((s) => s.id);
      expect(await ids(["pending", "open"])).toEqual([older.id, newer.id]);
      expect(await ids(["closed"])).toEqual([done.id]);
      expect(await ids([])).toEqual([]);
    });

    test("daemonSessions: open claims a pending session once, for its daemon, when fresh", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const session = aDaemonSession(workspace.id, daemon.id, { createdAt: at(100) });
      await storage.daemonSessions.insert(session);
      expect(await storage.daemonSessions.open(other.id, session.id, at(101), at(90))).toBeNull();
      expect(await storage.daemonSessions.open(daemon.id, session.id, at(101), at(100, 1))).toBeNull();
      const results = await Promise.all(
        Array.from({ length: concurrency }, () =>
          storage.daemonSessions.open(daemon.id, session.id, at(102, 5), at(90)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toEqual([{ ...session, state: "open", openedAt: at(102, 5) }]);
      expect(await storage.daemonSessions.open(daemon.id, uid(), at(103), at(0))).toBeNull();
    });

    test("daemonSessions: close ends a pending or open session once", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const session = aDaemonSession(workspace.id, daemon.id);
      await storage.daemonSessions.insert(session);
      await storage.daemonSessions.open(daemon.id, session.id, at(11), at(0));
      const results = await Promise.all(
        Array.from({ length: concurrency }, (_, i) =>
          storage.daemonSessions.close(workspace.id, session.id, `reason ${i}`, at(12, 6)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ state: "closed", openedAt: at(11), closedAt: at(12, 6) });
      expect(await storage.daemonSessions.findById(workspace.id, session.id)).toEqual(winners[0]);
      expect(await storage.daemonSessions.open(daemon.id, session.id, at(13), at(0))).toBeNull();
    });

    test("daemonSessions: abandonPending closes old pending sessions only, up to the limit", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      // Far in the past, so sessions other tests left behind in a shared database are newer.
      const old = (s: number) => new Date(Date.UTC(1990, 0, 1) + s * 1000);
      const stale = [1, 2, 3].map((s) => aDaemonSession(workspace.id, daemon.id, { createdAt: old(s) }));
      const fresh = aDaemonSession(workspace.id, daemon.id, { createdAt: old(100) });
      const openOld = aDaemonSession(workspace.id, daemon.id, {
        createdAt: old(0),
        state: "open",
        openedAt: old(1),
      });
      for (const s of [...stale, fresh, openOld]) await storage.daemonSessions.insert(s);
      const first = await storage.daemonSessions.abandonPending(old(50), "never claimed", at(60), 2);
      expect(first.map((s) => s.id)).toEqual(expect.arrayContaining([stale[0]!.id, stale[1]!.id]));
      expect(first).toHaveLength(2);
      for (const s of first) expect(s).toMatchObject({ state: "closed", closeReason: "never claimed" });
      const second = await storage.daemonSessions.abandonPending(old(50), "never claimed", at(61), 10);
      expect(second.map((s) => s.id)).toEqual([stale[2]!.id]);
      expect((await storage.daemonSessions.findById(workspace.id, fresh.id))?.state).toBe("pending");
      expect((await storage.daemonSessions.findById(workspace.id, openOld.id))?.state).toBe("open");
    });

    test("daemonSessions: open records the relay; findRelay reads state and relay, in the workspace", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = await seedWorkspace();
      const relay = { instanceId: `instance-${uid()}`, url: "http://10.0.0.5:8080" };
      const relayed = aDaemonSession(workspace.id, daemon.id, { createdAt: at(100) });
      const bare = aDaemonSession(workspace.id, daemon.id, { createdAt: at(100) });
      await storage.daemonSessions.insert(relayed);
      await storage.daemonSessions.insert(bare);
      expect(await storage.daemonSessions.findRelay(workspace.id, relayed.id)).toEqual({
        state: "pending",
        createdAt: at(100),
        closeReason: "",
        relay: null,
      });
      const opened = await storage.daemonSessions.open(daemon.id, relayed.id, at(101), at(90), relay);
      // The relay is not part of the session record: the record reads the same either way.
      expect(opened).toEqual({ ...relayed, state: "open", openedAt: at(101) });
      expect(await storage.daemonSessions.findRelay(workspace.id, relayed.id)).toEqual({
        state: "open",
        createdAt: at(100),
        closeReason: "",
        relay,
      });
      await storage.daemonSessions.open(daemon.id, bare.id, at(101), at(90));
      expect((await storage.daemonSessions.findRelay(workspace.id, bare.id))?.relay).toBeNull();
      expect(await storage.daemonSessions.findRelay(other.workspace.id, relayed.id)).toBeNull();
      expect(await storage.daemonSessions.findRelay(workspace.id, uid())).toBeNull();
      await storage.daemonSessions.close(workspace.id, relayed.id, "done", at(102));
      expect(await storage.daemonSessions.findRelay(workspace.id, relayed.id)).toMatchObject({
        state: "closed",
        closeReason: "done",
      });
    });

    test("daemonSessions: closeOrphaned closes open sessions whose relay has no live lease, once", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const live = { instanceId: `live-${uid()}`, url: "http://a" };
      const gone = { instanceId: `gone-${uid()}`, url: "http://b" };
      // Far in the future, so leases other tests left behind in a shared database have lapsed.
      const future = (s: number) => new Date(Date.UTC(2090, 0, 1) + s * 1000);
      await storage.daemons.renewInstanceLease(live.instanceId, future(100), future(0));
      await storage.daemons.renewInstanceLease(gone.instanceId, future(10), future(0));
      const sessions = {
        onLive: aDaemonSession(workspace.id, daemon.id),
        onGone: aDaemonSession(workspace.id, daemon.id),
        unrelayed: aDaemonSession(workspace.id, daemon.id),
        pending: aDaemonSession(workspace.id, daemon.id),
      };
      for (const s of Object.values(sessions)) await storage.daemonSessions.insert(s);
      await storage.daemonSessions.open(daemon.id, sessions.onLive.id, at(11), at(0), live);
      await storage.daemonSessions.open(daemon.id, sessions.onGone.id, at(11), at(0), gone);
      await storage.daemonSessions.open(daemon.id, sessions.unrelayed.id, at(11), at(0));
      const state = async (id: string) => (await storage.daemonSessions.findById(workspace.id, id))?.state;

      // Both leases live: nothing of ours is orphaned.
      const early = await storage.daemonSessions.closeOrphaned(future(5), "gone", future(5), 500);
      expect(early.map((s) => s.id)).not.toContain(sessions.onGone.id);
      expect(await state(sessions.onGone.id)).toBe("open");

      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          storage.daemonSessions.closeOrphaned(future(20), "the relay stopped", future(20), 500),
        ),
      );
      const ours = results.flat().filter((s) => s.workspaceId === workspace.id);
      expect(ours.map((s) => s.id)).toEqual([sessions.onGone.id]);
      expect(ours[0]).toMatchObject({
        state: "closed",
        closeReason: "the relay stopped",
        closedAt: future(20),
      });
      expect(await state(sessions.onLive.id)).toBe("open");
      expect(await state(sessions.unrelayed.id)).toBe("open");
      expect(await state(sessions.pending.id)).toBe("pending");
      await storage.daemons.removeInstance(live.instanceId);
      await storage.daemons.removeInstance(gone.instanceId);
    });

    test("daemonSessions: closeAllForDaemon; a deleted daemon takes its sessions along", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const a = aDaemonSession(workspace.id, daemon.id);
      const b = aDaemonSession(workspace.id, daemon.id, { state: "open", openedAt: at(11) });
      const done = aDaemonSession(workspace.id, daemon.id, {
        state: "closed",
        closedAt: at(12),
        closeReason: "x",
      });
      const kept = aDaemonSession(workspace.id, other.id);
      for (const s of [a, b, done, kept]) await storage.daemonSessions.insert(s);
      const closed = await storage.daemonSessions.closeAllForDaemon(
        workspace.id,
        daemon.id,
        "rejected",
        at(20),
      );
      expect(closed.map((s) => s.id).sort()).toEqual([a.id, b.id].sort());
      expect(await storage.daemonSessions.findById(workspace.id, done.id)).toEqual(done);
      expect((await storage.daemonSessions.findById(workspace.id, kept.id))?.state).toBe("pending");
      await storage.daemons.delete(workspace.id, daemon.id);
      expect(await storage.daemonSessions.findById(workspace.id, a.id)).toBeNull();
      expect(await storage.daemonSessions.findById(workspace.id, kept.id)).not.toBeNull();
    });
  });
}

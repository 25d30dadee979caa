/**
 * The storage contract of the daemon-protocol repositories (`@wap/core/storage`
 * daemons-sessions.ts): the enrolment token, what the protocol adds to daemons, and terminal
 * sessions with their one-winner state changes. Registered by `runStorageContract`.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { describe, expect } from "vitest";
import type { DaemonSessionRecord } from "../../storage/daemon-sessions.js";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { EnrollTokenRecord } from "../../storage/enroll-tokens.js";
import type { Repositories, Storage } from "../../storage/storage.js";
import type { UserRecord } from "../../storage/users.js";
import type { WorkspaceRecord } from "../../storage/workspaces.js";

/** What the main suite hands over: its storage, its test registrar and its fixtures. */
export interface DaemonContractContext {
  readonly storage: () => Storage;
  readonly test: (name: string, fn: () => Promise<void>, timeout?: number) => void;
  readonly seedWorkspace: (s?: Repositories) => Promise<{ user: UserRecord; workspace: WorkspaceRecord }>;
  readonly aDaemon: (workspaceId: string, overrides?: Partial<DaemonRecord>) => DaemonRecord;
  readonly expectUnique: (promise: Promise<unknown>, constraint: string) => Promise<void>;
}

const base = Date.UTC(2026, 7, 12, 7, 17, 0, 321);
const at = (seconds: number, ms = 0) => new Date(base + seconds * 1000 + ms);
const uid = () => randomUUID();
const concurrency = 20;

function aToken(workspaceId: string, overrides: Partial<EnrollTokenRecord> = {}): EnrollTokenRecord {
  return {
    workspaceId,
    tokenHash: `hash-${uid()}`,
    createdBy: uid(),
    createdAt: at(1, 5),
    expiresAt: at(86_401, 5),
    ...overrides,
  };
}

function aSession(
  workspaceId: string,
  daemonId: string,
  overrides: Partial<DaemonSessionRecord> = {},
): DaemonSessionRecord {
  return {
    id: uid(),
    workspaceId,
    daemonId,
    userId: uid(),
    username: "deploy$",
    state: "pending",
    createdAt: at(10, 7),
    openedAt: null,
    closedAt: null,
    closeReason: "",
    ...overrides,
  };
}

export function runDaemonContract(ctx: DaemonContractContext): void {
  const { test, seedWorkspace, aDaemon, expectUnique } = ctx;

  /** A workspace with one daemon in it. */
  async function seedDaemon(overrides: Partial<DaemonRecord> = {}) {
    const storage = ctx.storage();
    const { workspace } = await seedWorkspace();
    const daemon = aDaemon(workspace.id, overrides);
    await storage.daemons.insert(daemon);
    return { storage, workspace, daemon };
  }

  describe("enroll tokens", () => {
    test("enrollTokens: replace, find by workspace and by hash, replace again, delete", async () => {
      const storage = ctx.storage();
      const { workspace: a } = await seedWorkspace();
      const { workspace: b } = await seedWorkspace();
      expect(await storage.enrollTokens.find(a.id)).toBeNull();
      const first = aToken(a.id);
      await storage.enrollTokens.replace(first);
      expect(await storage.enrollTokens.find(a.id)).toEqual(first);
      expect(await storage.enrollTokens.findByTokenHash(first.tokenHash)).toEqual(first);
      expect(await storage.enrollTokens.find(b.id)).toBeNull();
      // An expired token is still found by hash: the caller decides what expired means.
      const second = aToken(a.id, { expiresAt: at(0) });
      await storage.enrollTokens.replace(second);
      expect(await storage.enrollTokens.findByTokenHash(first.tokenHash)).toBeNull();
      expect(await storage.enrollTokens.findByTokenHash(second.tokenHash)).toEqual(second);
      expect(await storage.enrollTokens.delete(b.id)).toBe(false);
      expect(await storage.enrollTokens.delete(a.id)).toBe(true);
      expect(await storage.enrollTokens.delete(a.id)).toBe(false);
      expect(await storage.enrollTokens.findByTokenHash(second.tokenHash)).toBeNull();
    });

    test("enrollTokens: a hash is unique across workspaces; the token goes with its workspace", async () => {
      const storage = ctx.storage();
      const { workspace: a } = await seedWorkspace();
      const { workspace: b } = await seedWorkspace();
      const token = aToken(a.id);
      await storage.enrollTokens.replace(token);
      await expectUnique(
        storage.enrollTokens.replace(aToken(b.id, { tokenHash: token.tokenHash })),
        "daemon_enroll_tokens.token_hash",
      );
      expect(await storage.enrollTokens.find(b.id)).toBeNull();
      await storage.workspaces.delete(a.id);
      expect(await storage.enrollTokens.findByTokenHash(token.tokenHash)).toBeNull();
    });
  });

  describe("daemon protocol", () => {
    test("daemons: findForAuthentication by id alone; findByPublicKey within one workspace", async () => {
      const { storage, workspace, daemon } = await seedDaemon({ authPublicKey: `pem-${uid()}` });
      const other = await seedWorkspace();
      expect(await storage.daemons.findForAuthentication(daemon.id)).toEqual(daemon);
      expect(await storage.daemons.findForAuthentication(uid())).toBeNull();
      expect(await storage.daemons.findByPublicKey(workspace.id, daemon.authPublicKey)).toEqual(daemon);
      expect(await storage.daemons.findByPublicKey(other.workspace.id, daemon.authPublicKey)).toBeNull();
      expect(await storage.daemons.findByPublicKey(workspace.id, `pem-${uid()}`)).toBeNull();
    });

    test("daemons: setOnline records the holder; a stale holder cannot take it offline", async () => {
      const { storage, workspace, daemon } = await seedDaemon();
      const holderA = `instance-a/${uid()}`;
      const holderB = `instance-b/${uid()}`;
      expect(await storage.daemons.onlineHolder(daemon.id)).toBeNull();
      expect(await storage.daemons.setOnline(daemon.id, holderA, at(20, 1))).toBe(true);
      expect(await storage.daemons.onlineHolder(daemon.id)).toBe(holderA);
      let stored = await storage.daemons.findById(workspace.id, daemon.id);
      // Being connected is not an edit: updatedAt stays.
      expect(stored).toEqual({ ...daemon, onlineSince: at(20, 1) });
      expect((await storage.daemons.list(workspace.id, { limit: 10, offset: 0, online: true })).total).toBe(
        1,
      );
      // The daemon reconnects elsewhere before instance A notices its stream closed.
      expect(await storage.daemons.setOnline(daemon.id, holderB, at(21, 2))).toBe(true);
      expect(await storage.daemons.setOnline(daemon.id, null, at(22), holderA)).toBe(false);
      expect(await storage.daemons.onlineHolder(daemon.id)).toBe(holderB);
      expect(await storage.daemons.setOnline(daemon.id, null, at(23), holderB)).toBe(true);
      stored = await storage.daemons.findById(workspace.id, daemon.id);
      expect(stored?.onlineSince).toBeNull();
      expect(await storage.daemons.onlineHolder(daemon.id)).toBeNull();
      expect(await storage.daemons.setOnline(uid(), holderA, at(24))).toBe(false);
    });

    test("daemons: releaseHolders frees exactly the holders with the prefix, wildcards literal", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const prefix = `inst_%!${uid()}/`;
      const mine = [aDaemon(workspace.id), aDaemon(workspace.id)];
      const others = [aDaemon(workspace.id), aDaemon(workspace.id)];
      for (const d of [...mine, ...others]) await storage.daemons.insert(d);
      await storage.daemons.setOnline(mine[0]!.id, `${prefix}1`, at(30));
      await storage.daemons.setOnline(mine[1]!.id, `${prefix}2`, at(30));
      // Would match if `_` or `%` were wildcards.
      await storage.daemons.setOnline(others[0]!.id, `${prefix.replace("_%", "xy")}1`, at(30));
      await storage.daemons.setOnline(others[1]!.id, `other/${prefix}1`, at(30));
      expect(await storage.daemons.releaseHolders(prefix)).toBe(2);
      for (const d of mine) expect(await storage.daemons.onlineHolder(d.id)).toBeNull();
      for (const d of others) expect(await storage.daemons.onlineHolder(d.id)).not.toBeNull();
      expect(await storage.daemons.releaseHolders(prefix)).toBe(0);
    });

    test("daemons: setOnline with ifHeldBy null takes only a daemon nobody holds", async () => {
      const { storage, daemon } = await seedDaemon();
      const mine = `instance-a/${uid()}`;
      const newer = `instance-b/${uid()}`;
      expect(await storage.daemons.setOnline(daemon.id, mine, at(40), null)).toBe(true);
      expect(await storage.daemons.onlineHolder(daemon.id)).toBe(mine);
      expect(await storage.daemons.setOnline(daemon.id, newer, at(41))).toBe(true);
      // Restating an older stream must not take the daemon from the newer one.
      expect(await storage.daemons.setOnline(daemon.id, mine, at(42), null)).toBe(false);
      expect(await storage.daemons.onlineHolder(daemon.id)).toBe(newer);
    });

    test("daemons: listHolders lists exactly the holders with the prefix", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const prefix = `inst_%!${uid()}/`;
      const [a, b, c, d] = [0, 1, 2, 3].map(() => aDaemon(workspace.id));
      for (const daemon of [a, b, c, d]) await storage.daemons.insert(daemon!);
      expect(await storage.daemons.listHolders(prefix)).toEqual([]);
      await storage.daemons.setOnline(a!.id, `${prefix}1`, at(50));
      await storage.daemons.setOnline(b!.id, `${prefix}2`, at(50));
      await storage.daemons.setOnline(c!.id, `${prefix.replace("_%", "xy")}1`, at(50));
      const listed = await storage.daemons.listHolders(prefix);
      expect(listed.sort((x, y) => x.holder.localeCompare(y.holder))).toEqual([
        { daemonId: a!.id, holder: `${prefix}1` },
        { daemonId: b!.id, holder: `${prefix}2` },
      ]);
    });

    test("daemons: instance leases establish, renew, lapse; lapsed and unknown instances' holders are released", async () => {
      const storage = ctx.storage();
      const { workspace } = await seedWorkspace();
      const live = `live-${uid()}`;
      const lapsing = `lapsing-${uid()}`;
      const unknown = `unknown-${uid()}`;
      // A prefix of another instance's id must not make its holders look live.
      const prefixOfLive = live.slice(0, -1);
      const daemons = [0, 1, 2, 3, 4].map(() => aDaemon(workspace.id));
      for (const daemon of daemons) await storage.daemons.insert(daemon);
      const [onLive, onLapsing, onUnknown, onPrefix, offline] = daemons;

      // A new instance: established (false), then renewed while live (true).
      expect(await storage.daemons.renewInstanceLease(live, at(130), at(100))).toBe(false);
      expect(await storage.daemons.renewInstanceLease(live, at(160), at(110))).toBe(true);
      expect(await storage.daemons.renewInstanceLease(lapsing, at(130), at(100))).toBe(false);
      await storage.daemons.setOnline(onLive!.id, `${live}/1`, at(111));
      await storage.daemons.setOnline(onLapsing!.id, `${lapsing}/1`, at(111));
      await storage.daemons.setOnline(onUnknown!.id, `${unknown}/1`, at(111));
      await storage.daemons.setOnline(onPrefix!.id, `${prefixOfLive}/1`, at(111));

      // While both leases are live, only the holders of no instance at all are released.
      expect(await storage.daemons.releaseLapsedInstances(at(120))).toBeGreaterThanOrEqual(2);
      expect(await storage.daemons.onlineHolder(onLive!.id)).toBe(`${live}/1`);
      expect(await storage.daemons.onlineHolder(onLapsing!.id)).toBe(`${lapsing}/1`);
      expect(await storage.daemons.onlineHolder(onUnknown!.id)).toBeNull();
      expect(await storage.daemons.onlineHolder(onPrefix!.id)).toBeNull();

      // `lapsing` stopped renewing: at its expiry it counts offline, and its renewal says so.
      expect(await storage.daemons.releaseLapsedInstances(at(130))).toBeGreaterThanOrEqual(1);
      expect(await storage.daemons.onlineHolder(onLapsing!.id)).toBeNull();
      expect((await storage.daemons.findById(workspace.id, onLapsing!.id))?.onlineSince).toBeNull();
      expect(await storage.daemons.onlineHolder(onLive!.id)).toBe(`${live}/1`);
      expect(await storage.daemons.renewInstanceLease(lapsing, at(170), at(140))).toBe(false);
      // Established anew: live again, and renewable.
      expect(await storage.daemons.renewInstanceLease(lapsing, at(180), at(150))).toBe(true);
      // A lease that lapsed without being swept is not renewed either.
      expect(await storage.daemons.renewInstanceLease(live, at(200), at(160))).toBe(false);

      // A stopping instance releases its holders and forgets its lease.
      await storage.daemons.releaseHolders(`${live}/`);
      await storage.daemons.removeInstance(live);
      expect(await storage.daemons.renewInstanceLease(live, at(210), at(170))).toBe(false);
      expect(await storage.daemons.onlineHolder(offline!.id)).toBeNull();
    });

    test("daemons: recordSync round-trips and starts empty; scoped to the workspace", async () => {
      const { storage, workspace, daemon } = await seedDaemon();
      const other = await seedWorkspace();
      expect(await storage.daemons.findSync(workspace.id, daemon.id)).toEqual({
        users: [],
        principals: {},
        syncedAt: null,
      });
      const sync = {
        users: ["root", "ubuntu", "ünïcødé"],
        principals: { deploy$: [uid(), uid()], root: [] },
        syncedAt: at(40, 9),
      };
      await storage.daemons.recordSync(other.workspace.id, daemon.id, { ...sync, users: ["nope"] });
      await storage.daemons.recordSync(workspace.id, daemon.id, sync);
      expect(await storage.daemons.findSync(workspace.id, daemon.id)).toEqual(sync);
      expect(await storage.daemons.findSync(other.workspace.id, daemon.id)).toBeNull();
      expect(await storage.daemons.findById(workspace.id, daemon.id)).toEqual(daemon);
    });
  });

  describe("daemon sessions", () => {
    test("daemonSessions: every field round-trips; another workspace's id finds nothing", async () => {
      const { storage, workspace, daemon } = await seedDaemon();
      const other = await seedWorkspace();
      const pending = aSession(workspace.id, daemon.id);
      const closed = aSession(workspace.id, daemon.id, {
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
      const { storage, workspace, daemon } = await seedDaemon();
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const older = aSession(workspace.id, daemon.id, { createdAt: at(1) });
      const newer = aSession(workspace.id, daemon.id, { createdAt: at(2), state: "open", openedAt: at(3) });
      const done = aSession(workspace.id, daemon.id, { createdAt: at(0), state: "closed", closedAt: at(4) });
      const elsewhere = aSession(workspace.id, other.id);
      for (const s of [newer, done, older, elsewhere]) await storage.daemonSessions.insert(s);
      const ids = async (states: ("pending" | "open" | "closed")[]) =>
        (await storage.daemonSessions.listByDaemon(workspace.id, daemon.id, states)).map((s) => s.id);
      expect(await ids(["pending", "open"])).toEqual([older.id, newer.id]);
      expect(await ids(["closed"])).toEqual([done.id]);
      expect(await ids([])).toEqual([]);
    });

    test("daemonSessions: open claims a pending session once, for its daemon, when fresh", async () => {
      const { storage, workspace, daemon } = await seedDaemon();
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const session = aSession(workspace.id, daemon.id, { createdAt: at(100) });
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
      const { storage, workspace, daemon } = await seedDaemon();
      const session = aSession(workspace.id, daemon.id);
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
      const { storage, workspace, daemon } = await seedDaemon();
      // Far in the past, so sessions other tests left behind in a shared database are newer.
      const old = (s: number) => new Date(Date.UTC(1990, 0, 1) + s * 1000);
      const stale = [1, 2, 3].map((s) => aSession(workspace.id, daemon.id, { createdAt: old(s) }));
      const fresh = aSession(workspace.id, daemon.id, { createdAt: old(100) });
      const openOld = aSession(workspace.id, daemon.id, {
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
      const { storage, workspace, daemon } = await seedDaemon();
      const other = await seedWorkspace();
      const relay = { instanceId: `instance-${uid()}`, url: "http://10.0.0.5:8080" };
      const relayed = aSession(workspace.id, daemon.id, { createdAt: at(100) });
      const bare = aSession(workspace.id, daemon.id, { createdAt: at(100) });
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
      const { storage, workspace, daemon } = await seedDaemon();
      const live = { instanceId: `live-${uid()}`, url: "http://a" };
      const gone = { instanceId: `gone-${uid()}`, url: "http://b" };
      // Far in the future, so leases other tests left behind in a shared database have lapsed.
      const future = (s: number) => new Date(Date.UTC(2090, 0, 1) + s * 1000);
      await storage.daemons.renewInstanceLease(live.instanceId, future(100), future(0));
      await storage.daemons.renewInstanceLease(gone.instanceId, future(10), future(0));
      const sessions = {
        onLive: aSession(workspace.id, daemon.id),
        onGone: aSession(workspace.id, daemon.id),
        unrelayed: aSession(workspace.id, daemon.id),
        pending: aSession(workspace.id, daemon.id),
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
      const { storage, workspace, daemon } = await seedDaemon();
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const a = aSession(workspace.id, daemon.id);
      const b = aSession(workspace.id, daemon.id, { state: "open", openedAt: at(11) });
      const done = aSession(workspace.id, daemon.id, { state: "closed", closedAt: at(12), closeReason: "x" });
      const kept = aSession(workspace.id, other.id);
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

/**
 * The storage contract of daemons: round-trips, patches, paging and filters by query, online and
 * status. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { Storage } from "../../storage/storage.js";
import { aDaemon, at, type ContractContext, daemonAt, seedDaemon, uid } from "./fixtures.js";

export function runDaemonRecordContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("daemons", () => {
    test("daemons: every field round-trips; another workspace's id finds nothing", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const daemon = aDaemon(a.workspace.id, {
        targetId: uid(),
        status: "accepted",
        recordSessions: true,
        metadata: { "kernel ✓": "6.1 «lts»", empty: "" },
        onlineSince: at(51, 1),
      });
      const bare = aDaemon(a.workspace.id, { metadata: {} });
      await storage().daemons.insert(daemon);
      await storage().daemons.insert(bare);
      expect(await storage().daemons.findById(a.workspace.id, daemon.id)).toEqual(daemon);
      expect(await storage().daemons.findById(a.workspace.id, bare.id)).toEqual(bare);
      expect(await storage().daemons.findById(a.workspace.id, uid())).toBeNull();
      expect(await storage().daemons.findById(b.workspace.id, daemon.id)).toBeNull();
      expect(
        await storage().daemons.update(b.workspace.id, daemon.id, { status: "rejected" }, at(1)),
      ).toBeNull();
      expect(await storage().daemons.delete(b.workspace.id, daemon.id)).toBe(false);
      expect((await storage().daemons.list(b.workspace.id, { limit: 10, offset: 0 })).total).toBe(0);
      expect(await storage().daemons.findById(a.workspace.id, daemon.id)).toEqual(daemon);
    });

    test("daemons: update changes only the given fields; delete", async () => {
      const { workspace } = await seedWorkspace();
      const daemon = aDaemon(workspace.id);
      await storage().daemons.insert(daemon);
      const patch = {
        status: "accepted" as const,
        recordSessions: true,
        metadata: { os: "freebsd" },
        name: "renamed-host",
        targetId: uid(),
        onlineSince: at(52, 2),
      };
      const updated = await storage().daemons.update(workspace.id, daemon.id, patch, at(53, 3));
      expect(updated).toEqual({ ...daemon, ...patch, updatedAt: at(53, 3) });
      const offline = await storage().daemons.update(
        workspace.id,
        daemon.id,
        { onlineSince: null, targetId: null },
        at(54),
      );
      expect(offline).toEqual({
        ...daemon,
        ...patch,
        onlineSince: null,
        targetId: null,
        updatedAt: at(54),
      });
      expect(await storage().daemons.update(workspace.id, uid(), { name: "x" }, at(1))).toBeNull();
      expect(await storage().daemons.delete(workspace.id, daemon.id)).toBe(true);
      expect(await storage().daemons.delete(workspace.id, daemon.id)).toBe(false);
    });

    test("daemons: list pages and filters by query, online and status", async () => {
      const { workspace } = await seedWorkspace();
      const mk = (i: number, o: Partial<DaemonRecord>) =>
        aDaemon(workspace.id, { createdAt: at(3000 + i), ...o });
      const web = mk(0, { name: "Web-01", status: "accepted", onlineSince: at(1) });
      const db = mk(1, { name: "db-01", status: "accepted" });
      const pending = mk(2, { name: "WEB-02", status: "pending" });
      const rejected = mk(3, { name: "laptop", status: "rejected", onlineSince: at(2) });
      for (const d of [rejected, pending, db, web]) await storage().daemons.insert(d);
      const ids = async (filter: Omit<Parameters<Storage["daemons"]["list"]>[1], "limit" | "offset">) => {
        const page = await storage().daemons.list(workspace.id, { limit: 100, offset: 0, ...filter });
        expect(page.total).toBe(page.items.length);
        return page.items.map((d) => d.id);
      };
      expect(await ids({})).toEqual([web.id, db.id, pending.id, rejected.id]);
      expect(await ids({ query: "web" })).toEqual([web.id, pending.id]);
      expect(await ids({ online: true })).toEqual([web.id, rejected.id]);
      expect(await ids({ online: false })).toEqual([db.id, pending.id]);
      expect(await ids({ status: "accepted" })).toEqual([web.id, db.id]);
      expect(await ids({ query: "01", status: "accepted", online: false })).toEqual([db.id]);
      expect(await storage().daemons.list(workspace.id, { limit: 2, offset: 1 })).toEqual({
        items: [db, pending],
        total: 4,
      });
    });
  });

  daemonProtocol(ctx);
}

function daemonProtocol(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = daemonAt;

  describe("daemon protocol", () => {
    test("daemons: findForAuthentication by id alone; findByPublicKey within one workspace", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx, { authPublicKey: `pem-${uid()}` });
      const other = await seedWorkspace();
      expect(await storage.daemons.findForAuthentication(daemon.id)).toEqual(daemon);
      expect(await storage.daemons.findForAuthentication(uid())).toBeNull();
      expect(await storage.daemons.findByPublicKey(workspace.id, daemon.authPublicKey)).toEqual(daemon);
      expect(await storage.daemons.findByPublicKey(other.workspace.id, daemon.authPublicKey)).toBeNull();
      expect(await storage.daemons.findByPublicKey(workspace.id, `pem-${uid()}`)).toBeNull();
    });

    test("daemons: setOnline records the holder; a stale holder cannot take it offline", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
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
      const { storage, daemon } = await seedDaemon(ctx);
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
      const { storage, workspace, daemon } = await seedDaemon(ctx);
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
}

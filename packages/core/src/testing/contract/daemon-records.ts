/**
 * The storage contract of daemons: round-trips, patches, paging and filters by query, online and
 * status. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { DaemonRecord } from "../../storage/daemons.js";
import type { Storage } from "../../storage/storage.js";
import { aDaemon, at, type ContractContext, uid } from "./fixtures.js";

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
}

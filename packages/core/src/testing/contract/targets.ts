/**
 * The storage contract of targets: round-trips, uniqueness, patches, paging, filters and the
 * catalog lookups. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import {
  accessAt,
  aDaemon,
  anAccessTarget,
  anAuthority,
  aPrincipal,
  aWebTarget,
  type ContractContext,
  certificateAt,
  expectUnique,
  page,
  seedAccess,
  seedAuthority,
  tag,
  uid,
} from "./fixtures.js";

export function runTargetContract(ctx: ContractContext): void {
  targetRecords(ctx);
  targetFiltersAndCatalog(ctx);
}

function targetRecords(ctx: ContractContext): void {
  const { test } = ctx;

  const at = certificateAt;

  const storage = () => ctx.storage();

  describe("targets", () => {
    test("targets: every field round-trips; null daemon, empty lists and maps too", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const full = aWebTarget(workspace.id, ca.id, {
        daemonId: uid(),
        description: "ünïcødé ✓",
        metadata: { "": "empty key", note: '«quoted» "x"' },
      });
      const bare = aWebTarget(workspace.id, ca.id, {
        tags: [],
        endpoints: [],
        metadata: {},
        description: "",
      });
      await storage().targets.insert(full);
      await storage().targets.insert(bare);
      expect(await storage().targets.findById(workspace.id, full.id)).toEqual(full);
      expect(await storage().targets.findById(workspace.id, bare.id)).toEqual(bare);
      expect(await storage().targets.findById(workspace.id, uid())).toBeNull();
    });

    test("targets: another workspace's id finds, changes, counts and deletes nothing", async () => {
      const a = await seedAuthority(ctx);
      const b = await seedAuthority(ctx);
      const target = aWebTarget(a.workspace.id, a.ca.id);
      await storage().targets.insert(target);
      const s = storage().targets;
      expect(await s.findById(b.workspace.id, target.id)).toBeNull();
      expect(await s.update(b.workspace.id, target.id, { name: "hijacked" }, at(1))).toBeNull();
      expect(await s.delete(b.workspace.id, target.id)).toBe(false);
      expect(await s.countByCa(b.workspace.id, a.ca.id)).toBe(0);
      expect(await s.list(b.workspace.id, { limit: 10, offset: 0 })).toEqual({ items: [], total: 0 });
      expect(await s.findById(a.workspace.id, target.id)).toEqual(target);
    });

    test("targets: names are unique per workspace", async () => {
      const a = await seedAuthority(ctx);
      const b = await seedAuthority(ctx);
      const target = aWebTarget(a.workspace.id, a.ca.id);
      const other = aWebTarget(a.workspace.id, a.ca.id);
      await storage().targets.insert(target);
      await storage().targets.insert(other);
      const clash = aWebTarget(a.workspace.id, a.ca.id, { name: target.name });
      await expectUnique(storage().targets.insert(clash), "targets.name");
      expect(await storage().targets.findById(a.workspace.id, clash.id)).toBeNull();
      await expectUnique(
        storage().targets.update(a.workspace.id, other.id, { name: target.name }, at(2)),
        "targets.name",
      );
      expect(await storage().targets.findById(a.workspace.id, other.id)).toEqual(other);
      await storage().targets.insert(aWebTarget(b.workspace.id, b.ca.id, { name: target.name }));
    });

    test("targets: update changes only the given fields; delete returns true once", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const second = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(second);
      const target = aWebTarget(workspace.id, ca.id);
      await storage().targets.insert(target);
      const patch = {
        caId: second.id,
        daemonId: uid(),
        name: `renamed-${tag()}`,
        description: "",
        tags: [],
        endpoints: ["[2001:db8::1]:4022"],
        metadata: { arch: "arm64" },
      };
      const updated = await storage().targets.update(workspace.id, target.id, patch, at(30, 9));
      expect(updated).toEqual({ ...target, ...patch, updatedAt: at(30, 9) });
      const cleared = await storage().targets.update(workspace.id, target.id, { daemonId: null }, at(31));
      expect(cleared).toEqual({ ...target, ...patch, daemonId: null, updatedAt: at(31) });
      // What a daemon reported waits beside the endpoints; an empty list reads as none waiting.
      const waiting = await storage().targets.update(
        workspace.id,
        target.id,
        { reportedEndpoints: ["10.0.0.9:22", "[fd00::1]:4022"] },
        at(32),
      );
      expect(waiting?.reportedEndpoints).toEqual(["10.0.0.9:22", "[fd00::1]:4022"]);
      expect(waiting?.endpoints).toEqual(patch.endpoints);
      const approved = await storage().targets.update(
        workspace.id,
        target.id,
        { reportedEndpoints: [] },
        at(33),
      );
      expect(approved).toEqual({ ...target, ...patch, daemonId: null, updatedAt: at(33) });
      expect(await storage().targets.delete(workspace.id, target.id)).toBe(true);
      expect(await storage().targets.delete(workspace.id, target.id)).toBe(false);
      expect(await storage().targets.findById(workspace.id, target.id)).toBeNull();
    });

    test("targets: list pages oldest first with the total and filters by authority and daemon", async () => {
      const { workspace, ca } = await seedAuthority(ctx);
      const other = anAuthority(workspace.id);
      await storage().certificateAuthorities.insert(other);
      const daemonId = uid();
      const targets = Array.from({ length: 5 }, (_, i) =>
        aWebTarget(workspace.id, i % 2 ? other.id : ca.id, {
          createdAt: at(100 + i),
          daemonId: i === 3 ? daemonId : null,
        }),
      );
      for (const t of [...targets].reverse()) await storage().targets.insert(t);
      const list = (filter: { caId?: string; daemonId?: string; limit?: number; offset?: number }) =>
        storage().targets.list(workspace.id, { limit: 100, offset: 0, ...filter });
      expect(await list({ limit: 2 })).toEqual({ items: targets.slice(0, 2), total: 5 });
      expect(await list({ limit: 2, offset: 4 })).toEqual({ items: targets.slice(4), total: 5 });
      expect(await list({ caId: other.id })).toEqual({ items: [targets[1], targets[3]], total: 2 });
      expect(await list({ daemonId })).toEqual({ items: [targets[3]], total: 1 });
      expect(await storage().targets.countByCa(workspace.id, ca.id)).toBe(3);
      expect(await storage().targets.countByCa(workspace.id, other.id)).toBe(2);
      expect(await storage().targets.countByCa(workspace.id, uid())).toBe(0);
    });
  });
}

function targetFiltersAndCatalog(c: ContractContext): void {
  const { test } = c;

  const at = accessAt;

  const s = () => c.storage();

  describe("target filters and catalog", () => {
    test("targets: list by query, tags and principal usernames", async () => {
      const { ws, ca, target } = await seedAccess(c);
      const web = anAccessTarget(ws, ca.id, {
        name: `Web-${tag()}`,
        description: "Front END",
        tags: ["prod", "eu"],
        createdAt: at(30),
      });
      await s().targets.insert(web);
      await s().principals.insert(aPrincipal(ws, web.id, { username: "www" }));
      await s().principals.insert(aPrincipal(ws, target.id, { username: "postgres" }));
      const ids = async (filter: object) =>
        (await s().targets.list(ws, { ...page, ...filter })).items.map((t) => t.id);
      expect(await ids({ query: "web-" })).toEqual([web.id]);
      expect(await ids({ query: "front end" })).toEqual([web.id]);
      expect(await ids({ query: "PRIMARY" })).toEqual([target.id]);
      expect(await ids({ tags: ["prod"] })).toEqual([target.id, web.id]);
      expect(await ids({ tags: ["prod", "eu"] })).toEqual([web.id]);
      expect(await ids({ principals: ["www"] })).toEqual([web.id]);
      expect(await ids({ principals: ["www", "postgres"] })).toEqual([target.id, web.id]);
      expect(await ids({ principals: ["nobody"] })).toEqual([]);
      expect((await s().targets.list(ws, { ...page, tags: ["eu"], principals: ["www"] })).total).toBe(1);
    });

    test("target catalog: by ids, distinct tags, daemons of targets; other workspaces excluded", async () => {
      const a = await seedAccess(c);
      const b = await seedAccess(c);
      const second = anAccessTarget(a.ws, a.ca.id, { tags: ["eu", "prod"], createdAt: at(40) });
      await s().targets.insert(second);
      expect(
        (await s().targets.listByIds(a.ws, [second.id, a.target.id, b.target.id, uid()])).map((t) => t.id),
      ).toEqual([a.target.id, second.id]);
      expect(await s().targets.tags(a.ws)).toEqual(["eu", "prod"]);
      const daemon = aDaemon(a.ws, { targetId: second.id });
      await s().daemons.insert(daemon);
      await s().daemons.insert(aDaemon(b.ws, { targetId: b.target.id }));
      expect(
        (await s().targets.daemonsOf(a.ws, [a.target.id, second.id, b.target.id])).map((d) => d.id),
      ).toEqual([daemon.id]);
      expect(await s().targets.daemonsOf(b.ws, [second.id])).toEqual([]);
    });
  });
}

/**
 * The storage contract of the audit log: appending, newest-first paging, time filters, uniqueness.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { AuditEventRecord } from "../../storage/audit.js";
import type { Storage } from "../../storage/storage.js";
import { anAuditEvent, at, type ContractContext, expectUnique, ssoAt, uid } from "./fixtures.js";

export function runAuditContract(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;
  const storage = () => ctx.storage();

  describe("audit events", () => {
    test("auditEvents: list is newest first, paged, with the total; other workspaces excluded", async () => {
      const a = await seedWorkspace();
      const b = await seedWorkspace();
      const events = [3, 1, 4, 0, 2].map((i) =>
        anAuditEvent(a.workspace.id, { timestamp: at(4000 + i, i), userAgent: i === 0 ? "" : "ü" }),
      );
      for (const e of events) await storage().auditEvents.append(e);
      await storage().auditEvents.append(anAuditEvent(b.workspace.id));
      await storage().auditEvents.append(anAuditEvent(null));
      const newestFirst = [...events].sort((x, y) => y.timestamp.getTime() - x.timestamp.getTime());
      expect(await storage().auditEvents.list(a.workspace.id, { limit: 100, offset: 0 })).toEqual({
        items: newestFirst,
        total: 5,
      });
      expect(await storage().auditEvents.list(a.workspace.id, { limit: 2, offset: 2 })).toEqual({
        items: newestFirst.slice(2, 4),
        total: 5,
      });
      expect((await storage().auditEvents.list(b.workspace.id, { limit: 100, offset: 0 })).total).toBe(1);
    });

    test("auditEvents: events of the same millisecond list the last appended first", async () => {
      const { workspace } = await seedWorkspace();
      // Random ids, so only the append order can explain the result.
      const events = ["workspace.create", "workspace.update", "member.add", "workspace.update"].map(
        (action) => anAuditEvent(workspace.id, { action, timestamp: at(4500, 5) }),
      );
      for (const e of events) await storage().auditEvents.append(e);
      const page = await storage().auditEvents.list(workspace.id, { limit: 100, offset: 0 });
      expect(page.items).toEqual([...events].reverse());
    });

    test("auditEvents: list filters by since (inclusive), until (exclusive), action and actor", async () => {
      const { workspace } = await seedWorkspace();
      const actor = uid();
      const e1 = anAuditEvent(workspace.id, {
        timestamp: at(5000),
        action: "workspace.update",
        actorId: actor,
      });
      const e2 = anAuditEvent(workspace.id, { timestamp: at(5001), action: "workspace.update" });
      const e3 = anAuditEvent(workspace.id, {
        timestamp: at(5002),
        action: "daemon.delete",
        actorId: actor,
      });
      for (const e of [e1, e2, e3]) await storage().auditEvents.append(e);
      const ids = async (filter: Omit<Parameters<Storage["auditEvents"]["list"]>[1], "limit" | "offset">) => {
        const page = await storage().auditEvents.list(workspace.id, { limit: 100, offset: 0, ...filter });
        expect(page.total).toBe(page.items.length);
        return page.items.map((e) => e.id);
      };
      expect(await ids({ since: at(5001) })).toEqual([e3.id, e2.id]);
      expect(await ids({ until: at(5001) })).toEqual([e1.id]);
      expect(await ids({ since: at(5000), until: at(5002) })).toEqual([e2.id, e1.id]);
      expect(await ids({ action: "workspace.update" })).toEqual([e2.id, e1.id]);
      expect(await ids({ actorId: actor })).toEqual([e3.id, e1.id]);
      expect(await ids({ actorId: actor, action: "daemon.delete", since: at(5002) })).toEqual([e3.id]);
    });

    test("auditEvents: duplicate id throws UniqueViolationError", async () => {
      const { workspace } = await seedWorkspace();
      const event = anAuditEvent(workspace.id);
      await storage().auditEvents.append(event);
      await expectUnique(storage().auditEvents.append({ ...event }), "audit_events.id");
    });
  });

  filtersAndScan(ctx);
}

function filtersAndScan(ctx: ContractContext): void {
  const { test, seedWorkspace } = ctx;

  const at = ssoAt;

  const storage = () => ctx.storage();

  describe("audit log filters and scan", () => {
    test("auditEvents: list filters by lists of actors, actor types, actions and resources", async () => {
      const { workspace } = await seedWorkspace();
      const [x, y] = [uid(), uid()];
      const events = [
        anAuditEvent(workspace.id, {
          actorId: x,
          actorType: "user",
          action: "a.one",
          resource: "target:t1",
          timestamp: at(1),
        }),
        anAuditEvent(workspace.id, {
          actorId: y,
          actorType: "service_account",
          action: "a.two",
          resource: "team:t2",
          timestamp: at(2),
        }),
        anAuditEvent(workspace.id, {
          actorId: uid(),
          actorType: "daemon",
          action: "a.three",
          timestamp: at(3),
        }),
      ];
      for (const e of events) await storage().auditEvents.append(e);
      const ids = async (filter: Parameters<Storage["auditEvents"]["list"]>[1]) => {
        const page = await storage().auditEvents.list(workspace.id, filter);
        expect(page.total).toBe(page.items.length);
        return page.items.map((e) => e.id);
      };
      const all = { limit: 100, offset: 0 };
      const [e0, e1, e2] = events.map((e) => e.id);
      expect(await ids({ ...all, actorIds: [x, y] })).toEqual([e1, e0]);
      expect(await ids({ ...all, actorTypes: ["daemon", "user"] })).toEqual([e2, e0]);
      expect(await ids({ ...all, actions: ["a.two"] })).toEqual([e1]);
      expect(await ids({ ...all, actions: [], actorIds: [], actorTypes: [] })).toEqual([e2, e1, e0]);
      expect(await ids({ ...all, actions: ["a.one", "a.two"], actorTypes: ["service_account"] })).toEqual([
        e1,
      ]);
      expect(await ids({ ...all, resources: ["team:t2", "target:t1"] })).toEqual([e1, e0]);
      expect(await ids({ ...all, resources: ["target:t"] })).toEqual([]);
      expect(await ids({ ...all, resources: [] })).toEqual([e2, e1, e0]);
    });

    test("auditEvents: search is a substring, ASCII-case-insensitive, wildcards literal", async () => {
      const { workspace } = await seedWorkspace();
      const ua = anAuditEvent(workspace.id, { userAgent: "Mozilla/5.0 (X11) ÜBER", timestamp: at(1) });
      const ip = anAuditEvent(workspace.id, { ipAddress: "2001:db8::42", timestamp: at(2) });
      const action = anAuditEvent(workspace.id, { action: "Team.Member_Add", timestamp: at(3) });
      const percent = anAuditEvent(workspace.id, { resource: "target:100%_sure", timestamp: at(4) });
      for (const e of [ua, ip, action, percent]) await storage().auditEvents.append(e);
      const search = async (text: string) =>
        (await storage().auditEvents.list(workspace.id, { limit: 100, offset: 0, search: text })).items.map(
          (e) => e.id,
        );
      expect(await search("mozilla/5")).toEqual([ua.id]);
      expect(await search("ÜBER")).toEqual([ua.id]);
      // Only ASCII letters fold: the same answer on every engine.
      expect(await search("über")).toEqual([]);
      expect(await search("DB8::4")).toEqual([ip.id]);
      expect(await search("member_add")).toEqual([action.id]);
      expect(await search("100%_")).toEqual([percent.id]);
      expect(await search("0%s")).toEqual([]);
      expect(await search("member!add")).toEqual([]);
    });

    test("auditLog: scan walks a window oldest first in pages; count agrees", async () => {
      const { workspace } = await seedWorkspace();
      const other = await seedWorkspace();
      const events: AuditEventRecord[] = [];
      // Several events share a millisecond: their append order breaks the tie.
      for (let i = 0; i < 23; i++)
        events.push(anAuditEvent(workspace.id, { timestamp: at(100 + Math.floor(i / 4)) }));
      for (const e of events) await storage().auditEvents.append(e);
      await storage().auditEvents.append(anAuditEvent(other.workspace.id, { timestamp: at(101) }));
      await storage().auditEvents.append(anAuditEvent(workspace.id, { timestamp: at(99) }));
      await storage().auditEvents.append(anAuditEvent(workspace.id, { timestamp: at(200) }));
      const window = { since: at(100), until: at(200) };
      expect(await storage().auditEvents.count(workspace.id, window)).toBe(23);
      const seen: string[] = [];
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await storage().auditEvents.scan(workspace.id, {
          ...window,
          limit: 5,
          ...(after === undefined ? {} : { after }),
        });
        pages++;
        seen.push(...page.items.map((e) => e.id));
        if (page.next === null) break;
        after = page.next;
      }
      expect(seen).toEqual(events.map((e) => e.id));
      expect(pages).toBe(5);
      const first = await storage().auditEvents.scan(workspace.id, { ...window, limit: 1 });
      expect(first.items).toEqual([events[0]]);
    });

    test("auditLog: an exact last page ends with an empty one; an empty window is one page", async () => {
      const { workspace } = await seedWorkspace();
      for (let i = 0; i < 4; i++)
        await storage().auditEvents.append(anAuditEvent(workspace.id, { timestamp: at(i) }));
      const page = await storage().auditEvents.scan(workspace.id, { limit: 4 });
      expect(page.items).toHaveLength(4);
      expect(page.next).not.toBeNull();
      const rest = await storage().auditEvents.scan(workspace.id, { limit: 4, after: page.next! });
      expect(rest).toEqual({ items: [], next: null });
      expect(await storage().auditEvents.scan(workspace.id, { limit: 4, since: at(50) })).toEqual({
        items: [],
        next: null,
      });
      expect(await storage().auditEvents.count(workspace.id, { since: at(50) })).toBe(0);
      expect(await storage().auditEvents.count(workspace.id, {})).toBe(4);
    });
  });
}

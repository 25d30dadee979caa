/**
 * The storage contract of the audit log: appending, newest-first paging, time filters, uniqueness.
 * Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { Storage } from "../../storage/storage.js";
import { anAuditEvent, at, type ContractContext, expectUnique, uid } from "./fixtures.js";

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
}

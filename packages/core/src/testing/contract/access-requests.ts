/**
 * The storage contract of access requests: round-trip of the policy and transitions, updates
 * conditional on the version read, a target's active requests, what is due, tenant isolation and
 * the cascade with the target. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { AccessRequestRecord } from "../../storage/access-requests.js";
import { accessAt, type ContractContext, seedAccess, uid } from "./fixtures.js";

const at = accessAt;

function aRequest(
  ws: string,
  targetId: string,
  requesterId: string,
  overrides: Partial<AccessRequestRecord> = {},
) {
  const record: AccessRequestRecord = {
    id: uid(),
    workspaceId: ws,
    targetId,
    login: "ubuntu",
    requesterId,
    reason: "incident 42 — ünïcode",
    durationSeconds: 1800,
    state: "pending",
    policy: {
      maxDurationSeconds: 3600,
      approverRoles: ["admin"],
      approverTeamIds: [],
      approvalsRequired: 2,
      reasonRequired: true,
    },
    createdAt: at(1),
    decideBy: at(61),
    approvedAt: null,
    endsAt: null,
    events: [{ type: "requested", actorId: requesterId, reason: "incident 42 — ünïcode", at: at(1) }],
    version: 1,
    ...overrides,
  };
  return record;
}

export function runAccessRequestContract(c: ContractContext): void {
  const s = () => c.storage();
  describe("access requests", () => {
    c.test("access requests: round-trip, versioned updates, active and due requests, isolation", async () => {
      const { ws, guest, target } = await seedAccess(c);
      const other = await seedAccess(c);
      const pending = aRequest(ws, target.id, guest.id);
      const approved = aRequest(ws, target.id, guest.id, {
        createdAt: at(2),
        state: "approved",
        approvedAt: at(3),
        endsAt: at(33),
      });
      await s().accessRequests.insert(pending);
      await s().accessRequests.insert(approved);
      expect(await s().accessRequests.findById(ws, pending.id)).toEqual(pending);
      expect(await s().accessRequests.findById(other.ws, pending.id)).toBeNull();
      expect((await s().accessRequests.listByWorkspace(ws)).map((r) => r.id)).toEqual([
        approved.id,
        pending.id,
      ]);
      expect(await s().accessRequests.listByWorkspace(other.ws)).toEqual([]);

      const next: AccessRequestRecord = {
        ...pending,
        events: [...pending.events, { type: "approval", actorId: guest.id, reason: "", at: at(4) }],
        version: 2,
      };
      expect(await s().accessRequests.update(next)).toBe(true);
      // A second writer that read version 1 loses.
      expect(await s().accessRequests.update({ ...pending, state: "denied", version: 2 })).toBe(false);
      expect(await s().accessRequests.findById(ws, pending.id)).toEqual(next);

      expect((await s().accessRequests.activeOn(ws, target.id, at(32))).map((r) => r.id)).toEqual([
        approved.id,
      ]);
      expect(await s().accessRequests.activeOn(ws, target.id, at(33))).toEqual([]);
      expect(await s().accessRequests.activeOn(other.ws, target.id, at(32))).toEqual([]);
      const due = (when: Date) =>
        s()
          .accessRequests.due(when)
          .then((rows) => rows.filter((r) => r.workspaceId === ws).map((r) => r.id));
      expect(await due(at(32))).toEqual([]);
      expect(await due(at(33))).toEqual([approved.id]);
      expect(await due(at(61))).toEqual([pending.id, approved.id]);

      expect(await s().targets.delete(ws, target.id)).toBe(true);
      expect(await s().accessRequests.listByWorkspace(ws)).toEqual([]);
    });
  });
}

/**
 * The storage contract of webhook endpoints: round-trip, settings and cursor updates, secrets
 * with a rotation's overlap, the lease (one holder at a time, progress written only by it), the
 * endpoints with work, delivery attempts kept and pruned, tenant isolation and the cascade with
 * the workspace. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type {
  WebhookDeliveryRecord,
  WebhookEndpointRecord,
  WebhookSecretRecord,
} from "../../storage/webhooks.js";
import { anAuditEvent, type ContractContext, timeline, uid } from "./fixtures.js";

const at = timeline(Date.UTC(2026, 10, 28, 9, 0, 0, 125));

function anEndpoint(
  workspaceId: string,
  overrides: Partial<WebhookEndpointRecord> = {},
): WebhookEndpointRecord {
  return {
    id: uid(),
    workspaceId,
    url: "https://siem.example/hooks/wap?ü=1",
    description: "SIEM — ünïcode",
    eventTypes: ["team.*", "certificate.sign_ssh_user"],
    enabled: true,
    disabledReason: "",
    createdAt: at(1),
    updatedAt: at(1),
    cursor: 0,
    attempts: 0,
    nextAttemptAt: null,
    failingSince: null,
    lastError: "",
    lastSuccessAt: null,
    ...overrides,
  };
}

function aSecret(e: WebhookEndpointRecord, version: number, overrides: Partial<WebhookSecretRecord> = {}) {
  return {
    endpointId: e.id,
    workspaceId: e.workspaceId,
    version,
    sealed: new Uint8Array([version, 0, 255, 7]),
    createdAt: at(version),
    expiresAt: null,
    ...overrides,
  } satisfies WebhookSecretRecord;
}

function aDelivery(e: WebhookEndpointRecord, sequence: number, attempt = 1): WebhookDeliveryRecord {
  return {
    id: uid(),
    endpointId: e.id,
    workspaceId: e.workspaceId,
    eventId: uid(),
    sequence,
    eventType: "team.create",
    attempt,
    attemptedAt: at(100 + sequence, attempt),
    durationMs: 12,
    succeeded: attempt > 1,
    httpStatus: attempt > 1 ? 204 : 503,
    error: attempt > 1 ? "" : "the receiver answered HTTP 503",
  };
}

export function runWebhookContract(c: ContractContext): void {
  const s = () => c.storage();
  describe("webhooks", () => {
    c.test(
      "webhooks: round-trip, settings, cursor, isolation and the cascade with the workspace",
      async () => {
        const { workspace } = await c.seedWorkspace();
        const other = await c.seedWorkspace();
        const endpoint = anEndpoint(workspace.id);
        await s().webhookEndpoints.insert(endpoint, aSecret(endpoint, 1));
        const second = anEndpoint(workspace.id, { createdAt: at(2), updatedAt: at(2), eventTypes: [] });
        await s().webhookEndpoints.insert(second, aSecret(second, 1));

        expect(await s().webhookEndpoints.findById(workspace.id, endpoint.id)).toEqual(endpoint);
        expect(await s().webhookEndpoints.findById(other.workspace.id, endpoint.id)).toBeNull();
        const page = await s().webhookEndpoints.list(workspace.id, { limit: 1, offset: 0 });
        expect(page).toEqual({ items: [endpoint], total: 2 });
        expect((await s().webhookEndpoints.list(other.workspace.id, { limit: 10, offset: 0 })).total).toBe(0);

        // Disabled by the server after failing, then enabled again: the failures are cleared.
        await s().webhookEndpoints.setCursor(workspace.id, endpoint.id, 7, at(3));
        const failing = { ...endpoint, enabled: false, disabledReason: "failing" as const };
        const disabled = await s().webhookEndpoints.updateSettings(workspace.id, endpoint.id, failing, at(4));
        expect(disabled).toMatchObject({
          enabled: false,
          disabledReason: "failing",
          cursor: 7,
          updatedAt: at(4),
        });
        const settings = {
          ...failing,
          url: "https://new.example/",
          enabled: true,
          disabledReason: "" as const,
        };
        const enabled = await s().webhookEndpoints.updateSettings(workspace.id, endpoint.id, settings, at(5));
        expect(enabled).toMatchObject({ url: "https://new.example/", enabled: true, cursor: 7, attempts: 0 });
        expect(
          await s().webhookEndpoints.updateSettings(other.workspace.id, endpoint.id, settings, at(5)),
        ).toBeNull();
        expect(await s().webhookEndpoints.setCursor(other.workspace.id, endpoint.id, 1, at(5))).toBe(false);

        expect(await s().webhookEndpoints.delete(other.workspace.id, endpoint.id)).toBe(false);
        expect(await s().webhookEndpoints.delete(workspace.id, endpoint.id)).toBe(true);
        expect(await s().webhookEndpoints.findById(workspace.id, endpoint.id)).toBeNull();
        await s().workspaces.delete(workspace.id);
        expect(await s().webhookEndpoints.findById(workspace.id, second.id)).toBeNull();
        expect(await s().webhookEndpoints.secrets(workspace.id, second.id, at(0))).toEqual([]);
      },
    );

    c.test("webhooks: a rotated secret signs until its overlap ends; expired ones go", async () => {
      const { workspace } = await c.seedWorkspace();
      const other = await c.seedWorkspace();
      const endpoint = anEndpoint(workspace.id);
      await s().webhookEndpoints.insert(endpoint, aSecret(endpoint, 1));
      expect(await s().webhookEndpoints.rotateSecret(aSecret(endpoint, 2), at(60))).toBe(true);
      const both = await s().webhookEndpoints.secrets(workspace.id, endpoint.id, at(10));
      expect(both.map((x) => [x.version, x.expiresAt])).toEqual([
        [2, null],
        [1, at(60)],
      ]);
      expect(both[1]!.sealed).toEqual(new Uint8Array([1, 0, 255, 7]));
      expect(
        (await s().webhookEndpoints.secrets(workspace.id, endpoint.id, at(60))).map((x) => x.version),
      ).toEqual([2]);
      expect(await s().webhookEndpoints.secrets(other.workspace.id, endpoint.id, at(10))).toEqual([]);
      // The third rotation drops the first (expired) and sets the second to expire.
      expect(
        await s().webhookEndpoints.rotateSecret(aSecret(endpoint, 3, { createdAt: at(70) }), at(80)),
      ).toBe(true);
      const listed = await s().sealedValues.listAll();
      const mine = listed.filter((v) => v.ref.kind === "webhook_secret" && v.ref.endpointId === endpoint.id);
      expect(mine.map((v) => (v.ref.kind === "webhook_secret" ? v.ref.version : 0))).toEqual([2, 3]);
      const ref = { kind: "webhook_secret" as const, endpointId: endpoint.id, version: 3 };
      expect(await s().sealedValues.replace(ref, new Uint8Array([9]))).toBe(true);
      const now = await s().webhookEndpoints.secrets(workspace.id, endpoint.id, at(71));
      expect(now[0]!.sealed).toEqual(new Uint8Array([9]));
      // Not the endpoint of another workspace.
      const foreign = aSecret(endpoint, 4, { workspaceId: other.workspace.id });
      expect(await s().webhookEndpoints.rotateSecret(foreign, at(90))).toBe(false);
    });

    c.test(
      "webhooks: one lease holder at a time; endpoints with work; progress only under the lease",
      async () => {
        const { workspace } = await c.seedWorkspace();
        const endpoint = anEndpoint(workspace.id);
        await s().webhookEndpoints.insert(endpoint, aSecret(endpoint, 1));
        const mine = (e: WebhookEndpointRecord[]) => e.filter((x) => x.id === endpoint.id);
        // Nothing in the chain yet: no work.
        expect(mine(await s().webhookEndpoints.due(at(10), "a", 1000))).toEqual([]);
        for (let i = 0; i < 3; i++)
          await s().auditEvents.append(anAuditEvent(workspace.id, { timestamp: at(5, i) }));
        expect(mine(await s().webhookEndpoints.due(at(10), "a", 1000))).toHaveLength(1);

        expect(await s().webhookEndpoints.claim(endpoint.id, "a", at(10), at(40))).toMatchObject({
          id: endpoint.id,
        });
        expect(await s().webhookEndpoints.claim(endpoint.id, "b", at(20), at(50))).toBeNull();
        expect(mine(await s().webhookEndpoints.due(at(20), "b", 1000))).toEqual([]);
        expect(mine(await s().webhookEndpoints.due(at(20), "a", 1000))).toHaveLength(1);
        // The holder renews; another's progress is refused.
        expect(await s().webhookEndpoints.claim(endpoint.id, "a", at(20), at(60))).not.toBeNull();
        const progress = {
          from: 0,
          state: {
            cursor: 2,
            attempts: 1,
            nextAttemptAt: at(30),
            failingSince: at(21),
            lastError: "the receiver answered HTTP 503",
            lastSuccessAt: at(21),
          },
          deliveries: [aDelivery(endpoint, 1, 1), aDelivery(endpoint, 1, 2), aDelivery(endpoint, 2, 1)],
          keepDeliveries: 1,
        };
        expect(await s().webhookEndpoints.saveProgress(endpoint.id, "b", progress)).toBe(false);
        expect(await s().webhookEndpoints.saveProgress(endpoint.id, "a", progress)).toBe(true);
        expect(await s().webhookEndpoints.findById(workspace.id, endpoint.id)).toMatchObject(progress.state);
        // Only the attempts of the last event are kept.
        const deliveries = await s().webhookEndpoints.listDeliveries(workspace.id, endpoint.id, {
          limit: 10,
          offset: 0,
        });
        expect(deliveries).toEqual({ items: [progress.deliveries[2]], total: 1 });
        // Not due before its next attempt; a lapsed lease is free for another.
        expect(mine(await s().webhookEndpoints.due(at(25), "a", 1000))).toEqual([]);
        expect(await s().webhookEndpoints.claim(endpoint.id, "b", at(61), at(90))).not.toBeNull();
        expect(await s().webhookEndpoints.saveProgress(endpoint.id, "a", progress)).toBe(false);
        await s().webhookEndpoints.release(endpoint.id, "a");
        expect(await s().webhookEndpoints.claim(endpoint.id, "c", at(62), at(90))).toBeNull();
        await s().webhookEndpoints.release(endpoint.id, "b");
        expect(await s().webhookEndpoints.claim(endpoint.id, "c", at(62), at(90))).not.toBeNull();
        // Disabled by the worker: no more work.
        // A replay moved the cursor since the round started: its progress is refused.
        expect(await s().webhookEndpoints.setCursor(workspace.id, endpoint.id, 1, at(62))).toBe(true);
        expect(await s().webhookEndpoints.saveProgress(endpoint.id, "c", { ...progress, from: 2 })).toBe(
          false,
        );
        expect((await s().webhookEndpoints.findById(workspace.id, endpoint.id))?.cursor).toBe(1);
        const disable = { ...progress, from: 1, deliveries: [], disable: true as const };
        expect(await s().webhookEndpoints.saveProgress(endpoint.id, "c", disable)).toBe(true);
        expect(await s().webhookEndpoints.findById(workspace.id, endpoint.id)).toMatchObject({
          enabled: false,
          disabledReason: "failing",
        });
        expect(mine(await s().webhookEndpoints.due(at(100), "c", 1000))).toEqual([]);
        // Another address: its run of failures is over; the cursor stays.
        const moved = {
          ...endpoint,
          url: "https://moved.example/",
          enabled: false,
          disabledReason: "failing" as const,
        };
        expect(
          await s().webhookEndpoints.updateSettings(workspace.id, endpoint.id, moved, at(101)),
        ).toMatchObject({
          url: "https://moved.example/",
          cursor: 2,
          attempts: 0,
          failingSince: null,
          nextAttemptAt: null,
        });
      },
    );
  });
}

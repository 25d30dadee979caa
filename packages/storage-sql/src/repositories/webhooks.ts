/**
 * Webhook endpoints (`webhook_endpoints`), their sealed secrets (`webhook_secrets`) and delivery
 * attempts (`webhook_deliveries`). The lease columns let one instance at a time deliver an
 * endpoint's events: every write of delivery progress is conditional on holding it.
 *
 * @module
 */
import type {
  WebhookDeliveryRecord,
  WebhookDisabledReason,
  WebhookEndpointRecord,
  WebhookEndpointRepository,
  WebhookSecretRecord,
} from "@wap/core/storage";
import type { Selectable } from "kysely";
import {
  fromBytes,
  fromDate,
  fromDateOrNull,
  fromFlag,
  toBytes,
  toDate,
  toDateOrNull,
  toFlag,
  toJson,
  toNumber,
  toStringArray,
} from "../lib/mapping.js";
import { listPage } from "../lib/page.js";
import type { QueryRunner } from "../repositories.js";
import type {
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
  WebhookSecretsTable,
} from "../schema-webhooks.js";

function toEndpoint(r: Selectable<WebhookEndpointsTable>): WebhookEndpointRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    url: r.url,
    description: r.description,
    eventTypes: toStringArray(r.event_types),
    enabled: fromFlag(r.enabled),
    disabledReason: r.disabled_reason as WebhookDisabledReason,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
    cursor: toNumber(r.cursor),
    attempts: r.attempts,
    nextAttemptAt: toDateOrNull(r.next_attempt_at),
    failingSince: toDateOrNull(r.failing_since),
    lastError: r.last_error,
    lastSuccessAt: toDateOrNull(r.last_success_at),
  };
}

function toSecret(r: Selectable<WebhookSecretsTable>): WebhookSecretRecord {
  return {
    endpointId: r.endpoint_id,
    workspaceId: r.workspace_id,
    version: r.version,
    sealed: toBytes(r.sealed),
    createdAt: toDate(r.created_at),
    expiresAt: toDateOrNull(r.expires_at),
  };
}

function toDelivery(r: Selectable<WebhookDeliveriesTable>): WebhookDeliveryRecord {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    workspaceId: r.workspace_id,
    eventId: r.event_id,
    sequence: toNumber(r.sequence),
    eventType: r.event_type,
    attempt: r.attempt,
    attemptedAt: toDate(r.attempted_at),
    durationMs: r.duration_ms,
    succeeded: fromFlag(r.succeeded),
    httpStatus: r.http_status,
    error: r.error,
  };
}

const cleared = { attempts: 0, next_attempt_at: null, failing_since: null } as const;

export function createWebhookEndpointRepository(run: QueryRunner): WebhookEndpointRepository {
  return {
    async insert(endpoint, secret) {
      await run.write(async (db) => {
        await db
          .insertInto("webhook_endpoints")
          .values({
            id: endpoint.id,
            workspace_id: endpoint.workspaceId,
            url: endpoint.url,
            description: endpoint.description,
            event_types: toJson(endpoint.eventTypes),
            enabled: toFlag(endpoint.enabled),
            disabled_reason: endpoint.disabledReason,
            created_at: fromDate(endpoint.createdAt),
            updated_at: fromDate(endpoint.updatedAt),
            cursor: endpoint.cursor,
            attempts: endpoint.attempts,
            next_attempt_at: fromDateOrNull(endpoint.nextAttemptAt),
            failing_since: fromDateOrNull(endpoint.failingSince),
            last_error: endpoint.lastError,
            last_success_at: fromDateOrNull(endpoint.lastSuccessAt),
            lease_owner: null,
            lease_until: null,
          })
          .execute();
        await db.insertInto("webhook_secrets").values(secretRow(secret)).execute();
      });
    },
    async findById(workspaceId, id) {
      const row = await run.read((db) =>
        db
          .selectFrom("webhook_endpoints")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      return row ? toEndpoint(row) : null;
    },
    async list(workspaceId, page) {
      const found = await run.read((db) =>
        listPage(
          db.selectFrom("webhook_endpoints").where("workspace_id", "=", workspaceId),
          (q) => q.selectAll().orderBy("created_at").orderBy("id"),
          page,
        ),
      );
      return { items: found.rows.map(toEndpoint), total: found.total };
    },
    async updateSettings(workspaceId, id, settings, at) {
      const row = await run.write(async (db) => {
        const before = await db
          .selectFrom("webhook_endpoints")
          .select(["enabled", "url"])
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst();
        if (!before) return undefined;
        // Enabled again, or moved to another address: the next attempt runs at once.
        const retryNow = (settings.enabled && !fromFlag(before.enabled)) || settings.url !== before.url;
        return db
          .updateTable("webhook_endpoints")
          .set({
            url: settings.url,
            description: settings.description,
            event_types: toJson(settings.eventTypes),
            enabled: toFlag(settings.enabled),
            disabled_reason: settings.disabledReason,
            updated_at: fromDate(at),
            ...(retryNow && cleared),
          })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirst();
      });
      return row ? toEndpoint(row) : null;
    },
    async setCursor(workspaceId, id, cursor, at) {
      const result = await run.write((db) =>
        db
          .updateTable("webhook_endpoints")
          .set({ cursor, updated_at: fromDate(at), ...cleared })
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      return Number(result.numUpdatedRows) === 1;
    },
    async delete(workspaceId, id) {
      const result = await run.write((db) =>
        db
          .deleteFrom("webhook_endpoints")
          .where("workspace_id", "=", workspaceId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      return Number(result.numDeletedRows) === 1;
    },
    async secrets(workspaceId, endpointId, at) {
      const rows = await run.read((db) =>
        db
          .selectFrom("webhook_secrets")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .where("endpoint_id", "=", endpointId)
          .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", fromDate(at))]))
          .orderBy("version", "desc")
          .execute(),
      );
      return rows.map(toSecret);
    },
    async rotateSecret(secret, previousUntil) {
      return run.write(async (db) => {
        const endpoint = await db
          .selectFrom("webhook_endpoints")
          .select("id")
          .where("workspace_id", "=", secret.workspaceId)
          .where("id", "=", secret.endpointId)
          .executeTakeFirst();
        if (!endpoint) return false;
        const now = fromDate(secret.createdAt);
        await db
          .deleteFrom("webhook_secrets")
          .where("endpoint_id", "=", secret.endpointId)
          .where("expires_at", "<=", now)
          .execute();
        // Every earlier secret stops signing at the end of this overlap at the latest.
        const until = fromDate(previousUntil);
        await db
          .updateTable("webhook_secrets")
          .set({ expires_at: until })
          .where("endpoint_id", "=", secret.endpointId)
          .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", until)]))
          .execute();
        await db.insertInto("webhook_secrets").values(secretRow(secret)).execute();
        return true;
      });
    },
    async due(at, owner, limit) {
      const now = fromDate(at);
      const rows = await run.read((db) =>
        db
          .selectFrom("webhook_endpoints as e")
          .innerJoin("audit_chain_heads as h", "h.workspace_id", "e.workspace_id")
          .selectAll("e")
          .where("e.enabled", "=", 1)
          .whereRef("e.cursor", "<", "h.position")
          .where((eb) => eb.or([eb("e.next_attempt_at", "is", null), eb("e.next_attempt_at", "<=", now)]))
          .where((eb) =>
            eb.or([
              eb("e.lease_owner", "is", null),
              eb("e.lease_until", "<=", now),
              eb("e.lease_owner", "=", owner),
            ]),
          )
          .orderBy("e.next_attempt_at")
          .orderBy("e.id")
          .limit(limit)
          .execute(),
      );
      return rows.map(toEndpoint);
    },
    async claim(id, owner, at, until) {
      const row = await run.write((db) =>
        db
          .updateTable("webhook_endpoints")
          .set({ lease_owner: owner, lease_until: fromDate(until) })
          .where("id", "=", id)
          .where((eb) =>
            eb.or([
              eb("lease_owner", "is", null),
              eb("lease_until", "<=", fromDate(at)),
              eb("lease_owner", "=", owner),
            ]),
          )
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? toEndpoint(row) : null;
    },
    async release(id, owner) {
      await run.write((db) =>
        db
          .updateTable("webhook_endpoints")
          .set({ lease_owner: null, lease_until: null })
          .where("id", "=", id)
          .where("lease_owner", "=", owner)
          .execute(),
      );
    },
    async saveProgress(id, owner, progress) {
      const { state } = progress;
      return run.write(async (db) => {
        const result = await db
          .updateTable("webhook_endpoints")
          .set({
            cursor: state.cursor,
            attempts: state.attempts,
            next_attempt_at: fromDateOrNull(state.nextAttemptAt),
            failing_since: fromDateOrNull(state.failingSince),
            last_error: state.lastError,
            last_success_at: fromDateOrNull(state.lastSuccessAt),
            ...(progress.disable && { enabled: 0 as const, disabled_reason: "failing" }),
          })
          .where("id", "=", id)
          .where("lease_owner", "=", owner)
          .where("cursor", "=", progress.from)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) return false;
        if (progress.deliveries.length > 0) {
          await db
            .insertInto("webhook_deliveries")
            .values(
              progress.deliveries.map((d) => ({
                id: d.id,
                workspace_id: d.workspaceId,
                endpoint_id: d.endpointId,
                event_id: d.eventId,
                event_type: d.eventType,
                sequence: d.sequence,
                attempt: d.attempt,
                attempted_at: fromDate(d.attemptedAt),
                duration_ms: d.durationMs,
                succeeded: toFlag(d.succeeded),
                http_status: d.httpStatus,
                error: d.error,
              })),
            )
            .execute();
          // Only the recent attempts are kept: those of the last `keepDeliveries` events.
          await db
            .deleteFrom("webhook_deliveries")
            .where("endpoint_id", "=", id)
            .where("sequence", "<=", state.cursor - progress.keepDeliveries)
            .execute();
        }
        return true;
      });
    },
    async listDeliveries(workspaceId, endpointId, page) {
      const found = await run.read((db) =>
        listPage(
          db
            .selectFrom("webhook_deliveries")
            .where("workspace_id", "=", workspaceId)
            .where("endpoint_id", "=", endpointId),
          (q) => q.selectAll().orderBy("sequence", "desc").orderBy("attempt", "desc"),
          page,
        ),
      );
      return { items: found.rows.map(toDelivery), total: found.total };
    },
  };
}

function secretRow(s: WebhookSecretRecord) {
  return {
    workspace_id: s.workspaceId,
    endpoint_id: s.endpointId,
    version: s.version,
    sealed: fromBytes(s.sealed),
    created_at: fromDate(s.createdAt),
    expires_at: fromDateOrNull(s.expiresAt),
  };
}

/**
 * WebhookService: a workspace's webhook endpoints. Admins add, change, disable and delete them,
 * rotate their secrets (the previous one keeps signing for an overlap), look at recent delivery
 * attempts, send a test message and replay events from a sequence number. Every change is
 * audited; the secret is shown once, in the answer that made it, and sealed at rest.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WebhookService } from "@wap/api";
import * as z from "zod";
import { InvalidArgumentError, NotFoundError, PlatformError } from "../errors.js";
import { integrationsOf } from "../operations/integrations.js";
import { defineOperation } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";
import type {
  WebhookDeliveryRecord,
  WebhookEndpointRecord,
  WebhookSecretRecord,
} from "../storage/webhooks.js";
import { defaultPage, durationSeconds, paging, text, uuid, webUrlProblem } from "../validation/rules.js";
import { sendMessage, signingKeys, webhookFetch } from "./delivery.js";
import { eventTypes } from "./event-types.js";
import { type WebhookSettings, webhookSettings } from "./options.js";
import { testBody } from "./payload.js";
import { webhookSecretBytes, webhookSecretContext, webhookSecretText } from "./secrets.js";

const workspaceId = uuid.optional();
const manage = { kind: "workspace", permission: "webhooks.manage" } as const;
const description = text({ max: 1000 }).optional();
const url = text({ min: 1, max: 2048 });
// A list is always sent (empty when not given): optional only so the docs do not call it required.
const types = eventTypes.optional();

/** The longest overlap of a rotation, and the default. */
export const rotationOverlap = { min: 0, max: 7 * 24 * 3600, defaultSeconds: 24 * 3600 } as const;

const endpointNotFound = (id: string) =>
  new NotFoundError(`webhook endpoint ${id} not found`, { reason: "WEBHOOK_NOT_FOUND" });

const invalid = (field: string, description: string) =>
  new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
    violations: [{ field, description }],
  });

function settingsOf(services: Services): WebhookSettings {
  return webhookSettings(integrationsOf(services).webhooks);
}

/** The endpoint's URL as sent, or a refusal naming the field and the form expected. */
function checkedUrl(services: Services, value: string): string {
  const problem = webUrlProblem(value, { allowHttp: settingsOf(services).allowHttp });
  if (problem !== null) throw invalid("url", problem);
  return value;
}

async function found(repos: Repositories, workspaceId: string, id: string): Promise<WebhookEndpointRecord> {
  const endpoint = await repos.webhookEndpoints.findById(workspaceId, id);
  if (!endpoint) throw endpointNotFound(id);
  return endpoint;
}

/** A new secret: its sealed record, and the text shown once. */
async function newSecret(
  services: Services,
  endpoint: Pick<WebhookEndpointRecord, "id" | "workspaceId">,
  version: number,
  at: Date,
): Promise<{ record: WebhookSecretRecord; text: string }> {
  const bytes = services.random.bytes(webhookSecretBytes);
  try {
    const sealed = await services.keyStore.seal(bytes, webhookSecretContext(endpoint.id, version));
    return {
      record: {
        endpointId: endpoint.id,
        workspaceId: endpoint.workspaceId,
        version,
        sealed,
        createdAt: at,
        expiresAt: null,
      },
      text: webhookSecretText(bytes),
    };
  } finally {
    bytes.fill(0);
  }
}

async function toEndpointMessage(repos: Repositories, e: WebhookEndpointRecord, at: Date) {
  const [head, secrets] = await Promise.all([
    repos.auditEvents.chainHead(e.workspaceId),
    repos.webhookEndpoints.secrets(e.workspaceId, e.id, at),
  ]);
  const previous = secrets.find((s) => s.expiresAt !== null);
  return {
    id: e.id,
    workspaceId: e.workspaceId,
    url: e.url,
    description: e.description,
    eventTypes: [...e.eventTypes],
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    createdAt: timestampFromDate(e.createdAt),
    updatedAt: timestampFromDate(e.updatedAt),
    deliveredSequence: BigInt(e.cursor),
    latestSequence: BigInt(head?.position ?? 0),
    attempts: e.attempts,
    ...(e.nextAttemptAt && { nextAttemptAt: timestampFromDate(e.nextAttemptAt) }),
    ...(e.failingSince && { failingSince: timestampFromDate(e.failingSince) }),
    lastError: e.lastError,
    ...(e.lastSuccessAt && { lastSuccessAt: timestampFromDate(e.lastSuccessAt) }),
    ...(previous?.expiresAt && { previousSecretExpiresAt: timestampFromDate(previous.expiresAt) }),
  };
}

function toDeliveryMessage(d: WebhookDeliveryRecord) {
  return {
    id: d.id,
    eventId: d.eventId,
    sequence: BigInt(d.sequence),
    eventType: d.eventType,
    attempt: d.attempt,
    attemptedAt: timestampFromDate(d.attemptedAt),
    durationMs: d.durationMs,
    succeeded: d.succeeded,
    httpStatus: d.httpStatus,
    error: d.error,
  };
}

const resourceOf = (id: string) => `webhook:${id}`;

export const createWebhookEndpoint = defineOperation({
  method: WebhookService.method.createWebhookEndpoint,
  access: manage,
  input: z.object({ workspaceId, url, description, eventTypes: types, disabled: z.boolean().optional() }),
  async run({ input, workspace, services, now, audit }) {
    const target = checkedUrl(services, input.url);
    return services.storage.transaction(async (tx) => {
      // New endpoints receive what happens from now on (a replay sends what came before).
      const head = await tx.auditEvents.chainHead(workspace.workspaceId);
      const endpoint: WebhookEndpointRecord = {
        id: services.random.uuid(),
        workspaceId: workspace.workspaceId,
        url: target,
        description: input.description ?? "",
        eventTypes: [...new Set(input.eventTypes ?? [])],
        enabled: input.disabled !== true,
        disabledReason: input.disabled === true ? "admin" : "",
        createdAt: now,
        updatedAt: now,
        cursor: head?.position ?? 0,
        attempts: 0,
        nextAttemptAt: null,
        failingSince: null,
        lastError: "",
        lastSuccessAt: null,
      };
      const secret = await newSecret(services, endpoint, 1, now);
      await tx.webhookEndpoints.insert(endpoint, secret.record);
      await audit(tx, { action: "webhook.create", resource: resourceOf(endpoint.id) });
      return { endpoint: await toEndpointMessage(tx, endpoint, now), secret: secret.text };
    });
  },
});

export const listWebhookEndpoints = defineOperation({
  method: WebhookService.method.listWebhookEndpoints,
  access: manage,
  input: z.object({ workspaceId, ...paging }),
  async run({ input, workspace, services, now }) {
    const page = await services.storage.webhookEndpoints.list(workspace.workspaceId, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
    });
    return {
      endpoints: await Promise.all(page.items.map((e) => toEndpointMessage(services.storage, e, now))),
      total: page.total,
    };
  },
});

export const getWebhookEndpoint = defineOperation({
  method: WebhookService.method.getWebhookEndpoint,
  access: manage,
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, now }) {
    const endpoint = await found(services.storage, workspace.workspaceId, input.id);
    return { endpoint: await toEndpointMessage(services.storage, endpoint, now) };
  },
});

export const updateWebhookEndpoint = defineOperation({
  method: WebhookService.method.updateWebhookEndpoint,
  access: manage,
  input: z.object({
    workspaceId,
    id: uuid,
    url: url.optional(),
    description,
    eventTypes: types,
    allEventTypes: z.boolean().optional(),
    enabled: z.boolean().optional(),
  }),
  async run({ input, workspace, services, now, audit }) {
    const listed = input.eventTypes ?? [];
    if (input.allEventTypes === true && listed.length > 0) {
      throw invalid("event_types", "must be empty when all_event_types is set");
    }
    const target = input.url === undefined ? undefined : checkedUrl(services, input.url);
    return services.storage.transaction(async (tx) => {
      const endpoint = await found(tx, workspace.workspaceId, input.id);
      const enabled = input.enabled ?? endpoint.enabled;
      const updated = await tx.webhookEndpoints.updateSettings(
        workspace.workspaceId,
        input.id,
        {
          url: target ?? endpoint.url,
          description: input.description ?? endpoint.description,
          eventTypes:
            input.allEventTypes === true
              ? []
              : listed.length > 0
                ? [...new Set(listed)]
                : endpoint.eventTypes,
          enabled,
          disabledReason: enabled ? "" : input.enabled === false ? "admin" : endpoint.disabledReason,
        },
        now,
      );
      if (!updated) throw endpointNotFound(input.id);
      await audit(tx, { action: "webhook.update", resource: resourceOf(input.id) });
      return { endpoint: await toEndpointMessage(tx, updated, now) };
    });
  },
});

export const deleteWebhookEndpoint = defineOperation({
  method: WebhookService.method.deleteWebhookEndpoint,
  access: manage,
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, audit }) {
    await services.storage.transaction(async (tx) => {
      if (!(await tx.webhookEndpoints.delete(workspace.workspaceId, input.id)))
        throw endpointNotFound(input.id);
      await audit(tx, { action: "webhook.delete", resource: resourceOf(input.id) });
    });
    return {};
  },
});

export const rotateWebhookSecret = defineOperation({
  method: WebhookService.method.rotateWebhookSecret,
  access: manage,
  input: z.object({ workspaceId, id: uuid, overlap: durationSeconds(rotationOverlap).optional() }),
  async run({ input, workspace, services, now, audit }) {
    const overlapSeconds = input.overlap ?? rotationOverlap.defaultSeconds;
    return services.storage.transaction(async (tx) => {
      const endpoint = await found(tx, workspace.workspaceId, input.id);
      const current = await tx.webhookEndpoints.secrets(workspace.workspaceId, input.id, now);
      const version = Math.max(0, ...current.map((s) => s.version)) + 1;
      const secret = await newSecret(services, endpoint, version, now);
      await tx.webhookEndpoints.rotateSecret(secret.record, new Date(now.getTime() + overlapSeconds * 1000));
      await audit(tx, { action: "webhook.rotate_secret", resource: resourceOf(input.id) });
      return { endpoint: await toEndpointMessage(tx, endpoint, now), secret: secret.text };
    });
  },
});

export const listWebhookDeliveries = defineOperation({
  method: WebhookService.method.listWebhookDeliveries,
  access: manage,
  input: z.object({ workspaceId, id: uuid, ...paging }),
  async run({ input, workspace, services }) {
    await found(services.storage, workspace.workspaceId, input.id);
    const page = await services.storage.webhookEndpoints.listDeliveries(workspace.workspaceId, input.id, {
      limit: input.limit ?? defaultPage.limit,
      offset: input.offset ?? defaultPage.offset,
    });
    return { deliveries: page.items.map(toDeliveryMessage), total: page.total };
  },
});

export const sendTestWebhook = defineOperation({
  method: WebhookService.method.sendTestWebhook,
  access: manage,
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, now, audit }) {
    const endpoint = await found(services.storage, workspace.workspaceId, input.id);
    const keys = await signingKeys(services, endpoint, now);
    const id = services.random.uuid();
    const outcome = await sendMessage(
      webhookFetch(settingsOf(services)),
      endpoint.url,
      keys,
      id,
      now,
      testBody(workspace.workspaceId, endpoint.id, now),
    );
    await services.storage.transaction((tx) =>
      audit(tx, { action: "webhook.test", resource: resourceOf(endpoint.id) }),
    );
    return {
      delivery: {
        id,
        eventId: id,
        sequence: 0n,
        eventType: "webhook.test",
        attempt: 1,
        attemptedAt: timestampFromDate(now),
        durationMs: outcome.durationMs,
        succeeded: outcome.ok,
        httpStatus: outcome.httpStatus,
        error: outcome.error,
      },
    };
  },
});

export const replayWebhookEvents = defineOperation({
  method: WebhookService.method.replayWebhookEvents,
  access: manage,
  input: z.object({
    workspaceId,
    id: uuid,
    fromSequence: z
      .bigint({ error: "is required: a sequence number, at least 1" })
      .min(1n, "must be at least 1"),
  }),
  async run({ input, workspace, services, now, audit }) {
    return services.storage.transaction(async (tx) => {
      const endpoint = await found(tx, workspace.workspaceId, input.id);
      const head = await tx.auditEvents.chainHead(workspace.workspaceId);
      const last = head?.position ?? 0;
      if (input.fromSequence > BigInt(last)) {
        throw new PlatformError(
          "out_of_range",
          `invalid request: from_sequence: must be from 1 to ${last}, the workspace's last sequence number`,
          { reason: "WEBHOOK_SEQUENCE_OUT_OF_RANGE" },
        );
      }
      const cursor = Number(input.fromSequence) - 1;
      await tx.webhookEndpoints.setCursor(workspace.workspaceId, input.id, cursor, now);
      await audit(tx, { action: "webhook.replay", resource: resourceOf(input.id) });
      return {
        endpoint: await toEndpointMessage(
          tx,
          { ...endpoint, cursor, attempts: 0, nextAttemptAt: null, failingSince: null },
          now,
        ),
      };
    });
  },
});

export const webhookOperations = [
  createWebhookEndpoint,
  listWebhookEndpoints,
  getWebhookEndpoint,
  updateWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  listWebhookDeliveries,
  sendTestWebhook,
  replayWebhookEvents,
];

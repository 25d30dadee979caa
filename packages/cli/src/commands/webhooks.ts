/**
 * `wap webhooks`: the workspace's webhook endpoints (list, create, delete, rotate, test,
 * deliveries). A secret is printed once, when it is made; everything the server sends is escaped.
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { WebhookDelivery, WebhookEndpoint } from "@wap/api";
import { CliError, usageError } from "../exit-codes.js";
import { printable, table } from "../output.js";
import { type CommandContext, withSession } from "../session.js";
import { resolveWorkspace } from "../workspaces.js";

const when = (value: WebhookEndpoint["createdAt"]) =>
  value === undefined ? "" : timestampDate(value).toISOString();

/** The endpoint as `--json` prints it. */
function endpointJson(e: WebhookEndpoint) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    deliveredSequence: Number(e.deliveredSequence),
    latestSequence: Number(e.latestSequence),
    attempts: e.attempts,
    failingSince: when(e.failingSince),
    nextAttemptAt: when(e.nextAttemptAt),
    lastError: e.lastError,
    lastSuccessAt: when(e.lastSuccessAt),
    previousSecretExpiresAt: when(e.previousSecretExpiresAt),
  };
}

function deliveryJson(d: WebhookDelivery) {
  return {
    id: d.id,
    eventId: d.eventId,
    sequence: Number(d.sequence),
    eventType: d.eventType,
    attempt: d.attempt,
    attemptedAt: when(d.attemptedAt),
    durationMs: d.durationMs,
    succeeded: d.succeeded,
    httpStatus: d.httpStatus,
    error: d.error,
  };
}

function endpointId(id: string): string {
  if (!/^[0-9a-f-]{36}$/i.test(id))
    throw usageError(`"${printable(id)}" is not a webhook endpoint id (wap webhooks list shows them)`);
  return id;
}

function state(e: ReturnType<typeof endpointJson>): string {
  if (!e.enabled) return `disabled${e.disabledReason === "" ? "" : ` (${e.disabledReason})`}`;
  if (e.failingSince !== "") return `failing since ${e.failingSince}`;
  return e.deliveredSequence >= e.latestSequence
    ? "up to date"
    : `${e.latestSequence - e.deliveredSequence} to send`;
}

export async function listWebhooks(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { endpoints } = await session.clients.webhooks.listWebhookEndpoints({
      workspaceId: workspace.id,
      limit: 100,
    });
    const rows = endpoints.map(endpointJson);
    ctx.out.result(rows, () =>
      rows.length === 0
        ? `No webhook endpoints in ${printable(workspace.name)}.`
        : table(
            ["ID", "URL", "EVENTS", "SEQUENCE", "STATE", "LAST ERROR"],
            rows.map((e) => [
              e.id,
              e.url,
              e.eventTypes.length === 0 ? "all" : e.eventTypes.join(","),
              `${e.deliveredSequence}/${e.latestSequence}`,
              state(e),
              e.lastError,
            ]),
          ),
    );
  });
}

export interface CreateOptions {
  readonly description: string;
  readonly eventTypes: readonly string[];
}

export async function createWebhook(ctx: CommandContext, url: string, options: CreateOptions): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { endpoint, secret } = await session.clients.webhooks.createWebhookEndpoint({
      workspaceId: workspace.id,
      url,
      description: options.description,
      eventTypes: [...options.eventTypes],
    });
    const e = endpointJson(endpoint!);
    ctx.out.result({ ...e, secret }, () =>
      [
        `Created webhook endpoint ${printable(e.id)} for ${printable(e.url)}.`,
        `Its signing secret (shown this once; keep it where the receiver reads it):`,
        printable(secret ?? ""),
      ].join("\n"),
    );
  });
}

export async function deleteWebhook(ctx: CommandContext, id: string): Promise<void> {
  endpointId(id);
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    await session.clients.webhooks.deleteWebhookEndpoint({ workspaceId: workspace.id, id });
    ctx.out.result({ id, deleted: true }, () => `Deleted webhook endpoint ${printable(id)}.`);
  });
}

export async function rotateWebhook(
  ctx: CommandContext,
  id: string,
  overlapMs: number | undefined,
): Promise<void> {
  endpointId(id);
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { endpoint, secret } = await session.clients.webhooks.rotateWebhookSecret({
      workspaceId: workspace.id,
      id,
      ...(overlapMs !== undefined && { overlap: { seconds: BigInt(Math.ceil(overlapMs / 1000)), nanos: 0 } }),
    });
    const e = endpointJson(endpoint!);
    ctx.out.result({ ...e, secret }, () =>
      [
        `New signing secret of ${printable(e.id)} (shown this once):`,
        printable(secret ?? ""),
        e.previousSecretExpiresAt === ""
          ? "The previous secret no longer signs."
          : `The previous secret signs beside it until ${e.previousSecretExpiresAt}.`,
      ].join("\n"),
    );
  });
}

export async function testWebhook(ctx: CommandContext, id: string): Promise<void> {
  endpointId(id);
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { delivery } = await session.clients.webhooks.sendTestWebhook({ workspaceId: workspace.id, id });
    const d = deliveryJson(delivery!);
    if (!d.succeeded) throw new CliError(`the test message was not delivered: ${printable(d.error)}`);
    ctx.out.result(
      d,
      () => `Delivered (HTTP ${d.httpStatus}, ${d.durationMs} ms), webhook-id ${printable(d.eventId)}.`,
    );
  });
}

export async function webhookDeliveries(ctx: CommandContext, id: string): Promise<void> {
  endpointId(id);
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { deliveries } = await session.clients.webhooks.listWebhookDeliveries({
      workspaceId: workspace.id,
      id,
      limit: 100,
    });
    const rows = deliveries.map(deliveryJson);
    ctx.out.result(rows, () =>
      rows.length === 0
        ? "No delivery attempts yet."
        : table(
            ["SEQUENCE", "EVENT", "TYPE", "ATTEMPT", "AT", "RESULT"],
            rows.map((d) => [
              String(d.sequence),
              d.eventId,
              d.eventType,
              String(d.attempt),
              d.attemptedAt,
              d.succeeded ? `HTTP ${d.httpStatus}` : d.error,
            ]),
          ),
    );
  });
}

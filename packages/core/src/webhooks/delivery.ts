/**
 * The delivery worker: each platform runs one. It looks for endpoints with work (behind their
 * workspace's chain head, due, enabled), takes an endpoint's lease, sends the audit entries after
 * its cursor one by one in chain order, and writes where it got to, only while it still holds the
 * lease. Every instance over a shared database runs a worker; the lease makes one of them at a
 * time deliver a given endpoint, and the cursor makes the next one start where it stopped.
 *
 * At least once: the cursor moves after the receiver answered 2xx, so an instance that stops
 * between the two sends that event again (with the same `webhook-id`). A failure stops the
 * endpoint's round: the event is tried again after a backoff, and the events behind it wait, so
 * that a receiver never gets them out of order.
 *
 * @module
 */
import {
  auditSystemChange,
  publishSystemEvents,
  type SystemEvent,
} from "../access-requests/system-changes.js";
import { createOutboundFetch, type OutboundFetch } from "../lib/outbound-fetch.js";
import type { Services } from "../operations/services.js";
import type { ChainedAuditEventRecord } from "../storage/audit.js";
import type {
  WebhookDeliveryRecord,
  WebhookDeliveryState,
  WebhookEndpointRecord,
} from "../storage/webhooks.js";
import { retryDelayMs } from "./backoff.js";
import { eventTypeMatches } from "./event-types.js";
import { keptDeliveries, maxReceiverAnswerBytes, type WebhookSettings } from "./options.js";
import { eventBody } from "./payload.js";
import { webhookSecretContext } from "./secrets.js";
import { webhookSignatureHeader } from "./signature.js";

/** Endpoints served at once by one instance (each in order; different endpoints side by side). */
const parallelEndpoints = 8;

/** Longest error text kept for an attempt. */
const maxErrorChars = 500;

export interface WebhookDelivery {
  /** Looks for work now (a change committed on this instance). */
  nudge(): void;
  /** Stops looking for work and waits for the round under way. */
  close(): Promise<void>;
}

/** The outcome of sending one message. */
export interface SendOutcome {
  readonly ok: boolean;
  readonly httpStatus: number;
  readonly error: string;
  readonly durationMs: number;
}

/** The fetch webhooks use: the outbound guard, with the webhook limits. */
export function webhookFetch(settings: WebhookSettings): OutboundFetch {
  return createOutboundFetch({
    allowNetworks: settings.allowNetworks,
    totalTimeoutMs: settings.requestTimeoutMs,
    connectTimeoutMs: Math.min(5_000, settings.requestTimeoutMs),
    maxResponseBytes: maxReceiverAnswerBytes,
    failureCacheMs: 0,
  });
}

/** The keys that sign for an endpoint now: the current secret first, then one in its overlap. */
export async function signingKeys(services: Services, endpoint: WebhookEndpointRecord, at: Date) {
  const secrets = await services.storage.webhookEndpoints.secrets(endpoint.workspaceId, endpoint.id, at);
  return Promise.all(
    secrets.map((s) => services.keyStore.open(s.sealed, webhookSecretContext(s.endpointId, s.version))),
  );
}

/** Sends one signed message (Standard Webhooks headers) and says how it went; never throws. */
export async function sendMessage(
  fetch: OutboundFetch,
  url: string,
  keys: readonly Uint8Array[],
  id: string,
  at: Date,
  body: string,
  signal?: AbortSignal,
): Promise<SendOutcome> {
  const timestamp = Math.floor(at.getTime() / 1000);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const answer = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "wap-webhooks/1",
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": webhookSignatureHeader(keys, id, timestamp, body),
      },
      body,
      ...(signal && { signal }),
    });
    const ok = answer.status >= 200 && answer.status < 300;
    return {
      ok,
      httpStatus: answer.status,
      error: ok ? "" : `the receiver answered HTTP ${answer.status}`,
      durationMs: elapsed(),
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, httpStatus: 0, error: message.slice(0, maxErrorChars), durationMs: elapsed() };
  }
}

/** Starts the worker of a platform. */
export function startWebhookDelivery(services: Services, settings: WebhookSettings): WebhookDelivery {
  const owner = services.random.uuid();
  const fetch = webhookFetch(settings);
  let closed = false;
  // Closing cuts a request under way: shutting down never waits for a slow receiver.
  const stopping = new AbortController();
  let wake: (() => void) | undefined;
  let nudged = false;

  const pause = () =>
    new Promise<void>((resolve) => {
      if (nudged || closed) {
        resolve();
        return;
      }
      const timer = setTimeout(done, settings.pollMs);
      timer.unref?.();
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  async function loop(): Promise<void> {
    while (!closed) {
      nudged = false;
      let worked = false;
      try {
        worked = await round();
      } catch (error) {
        // The storage is unreachable or closing: the next round tries again.
        if (!closed) settings.onError(error);
      }
      if (!worked) await pause();
    }
  }

  /** Serves the endpoints with work; true when any was served. */
  async function round(): Promise<boolean> {
    const due = await services.storage.webhookEndpoints.due(services.clock.now(), owner, parallelEndpoints);
    if (due.length === 0 || closed) return false;
    const served = await Promise.all(
      due.map((endpoint) =>
        serve(endpoint.id).catch((error: unknown) => {
          if (!closed) settings.onError(error);
          return false;
        }),
      ),
    );
    return served.some(Boolean);
  }

  /** One round of one endpoint under its lease. */
  async function serve(id: string): Promise<boolean> {
    const repo = services.storage.webhookEndpoints;
    let now = services.clock.now();
    let leaseUntil = new Date(now.getTime() + settings.leaseMs);
    const endpoint = await repo.claim(id, owner, now, leaseUntil);
    if (endpoint === null) return false;
    let progressed = false;
    try {
      const head = await services.storage.auditEvents.chainHead(endpoint.workspaceId);
      if (head === null || head.position <= endpoint.cursor) return false;
      const entries = await services.storage.auditEvents.scanChain(endpoint.workspaceId, {
        from: endpoint.cursor + 1,
        to: Math.min(head.position, endpoint.cursor + settings.batchSize),
        limit: settings.batchSize,
      });
      const keys = await signingKeys(services, endpoint, now);
      let state: WebhookDeliveryState = endpoint;
      let disable = false;
      const deliveries: WebhookDeliveryRecord[] = [];
      for (const entry of entries) {
        if (closed) break;
        now = services.clock.now();
        // Renewed while a whole request still fits; lost (it lapsed, another took it): stop here.
        if (leaseUntil.getTime() - now.getTime() < settings.requestTimeoutMs * 2) {
          leaseUntil = new Date(now.getTime() + settings.leaseMs);
          if ((await repo.claim(id, owner, now, leaseUntil)) === null) return false;
        }
        if (!eventTypeMatches(endpoint.eventTypes, entry.action)) {
          state = { ...state, cursor: entry.position };
          progressed = true;
          continue;
        }
        const outcome = await sendMessage(
          fetch,
          endpoint.url,
          keys,
          entry.id,
          now,
          eventBody(entry),
          stopping.signal,
        );
        // Cut by the shutdown: not a failure of the receiver; the event is sent again later.
        if (closed && !outcome.ok) break;
        deliveries.push(deliveryOf(services, endpoint, entry, state.attempts + 1, now, outcome));
        progressed = true;
        if (outcome.ok) {
          state = {
            cursor: entry.position,
            attempts: 0,
            nextAttemptAt: null,
            failingSince: null,
            lastError: "",
            lastSuccessAt: now,
          };
          continue;
        }
        const failingSince = state.failingSince ?? now;
        const attempts = state.attempts + 1;
        state = {
          ...state,
          attempts,
          failingSince,
          lastError: outcome.error,
          nextAttemptAt: new Date(
            now.getTime() +
              retryDelayMs(
                attempts,
                { baseMs: settings.retryBaseMs, maxMs: settings.retryMaxMs },
                jitter(services),
              ),
          ),
        };
        disable = now.getTime() - failingSince.getTime() >= settings.disableAfterMs;
        break;
      }
      if (!progressed) return false;
      await save(endpoint, state, deliveries, disable);
      return true;
    } finally {
      await repo.release(id, owner).catch(() => undefined);
    }
  }

  async function save(
    endpoint: WebhookEndpointRecord,
    state: WebhookDeliveryState,
    deliveries: WebhookDeliveryRecord[],
    disable: boolean,
  ): Promise<void> {
    const events: SystemEvent[] = [];
    await services.storage.transaction(async (tx) => {
      const kept = await tx.webhookEndpoints.saveProgress(endpoint.id, owner, {
        // A replay meanwhile moved the cursor: this round's progress is dropped, the next starts there.
        from: endpoint.cursor,
        state,
        deliveries,
        keepDeliveries: keptDeliveries,
        ...(disable && { disable: true as const }),
      });
      if (kept && disable) {
        events.push(
          await auditSystemChange(tx, services, {
            workspaceId: endpoint.workspaceId,
            action: "webhook.disable",
            resource: `webhook:${endpoint.id}`,
            at: services.clock.now(),
          }),
        );
      }
    });
    await publishSystemEvents(services, events);
  }

  const running = loop();
  return {
    nudge() {
      nudged = true;
      wake?.();
    },
    async close() {
      closed = true;
      stopping.abort();
      wake?.();
      await running;
    },
  };
}

function deliveryOf(
  services: Services,
  endpoint: WebhookEndpointRecord,
  entry: ChainedAuditEventRecord,
  attempt: number,
  at: Date,
  outcome: SendOutcome,
): WebhookDeliveryRecord {
  return {
    id: services.random.uuid(),
    endpointId: endpoint.id,
    workspaceId: endpoint.workspaceId,
    eventId: entry.id,
    sequence: entry.position,
    eventType: entry.action,
    attempt,
    attemptedAt: at,
    durationMs: outcome.durationMs,
    succeeded: outcome.ok,
    httpStatus: outcome.httpStatus,
    error: outcome.error,
  };
}

/** A number in [0, 1) from the platform's random source. */
function jitter(services: Services): number {
  const [a = 0, b = 0] = services.random.bytes(2);
  return (a * 256 + b) / 65_536;
}

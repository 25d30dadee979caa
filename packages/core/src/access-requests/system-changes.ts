/**
 * Changes the platform makes by itself (a request expires or ends, a time-bound grant lapses):
 * audited with the platform (`system`) as actor, and, once committed, published as workspace
 * events like those of any call, so open terminals check their access again at once.
 *
 * @module
 */
import type { AuditAction } from "../audit/actions.js";
import { auditRow, noRequest } from "../audit/record.js";
import type { EventPayload } from "../events/event-bus.js";
import { toEventPayload, workspaceTopic } from "../events/workspace-events.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";

export interface SystemEvent {
  readonly topic: string;
  readonly payload: EventPayload;
}

/** Appends the audit entry of a change the platform made; returns its event, to publish after commit. */
export async function auditSystemChange(
  tx: Repositories,
  services: Pick<Services, "random">,
  entry: {
    readonly workspaceId: string;
    readonly action: AuditAction;
    readonly resource: string;
    readonly at: Date;
  },
): Promise<SystemEvent> {
  const row = auditRow(services, noRequest, { ...entry, actorId: "", actorType: "system" });
  await tx.auditEvents.append(row);
  return {
    topic: workspaceTopic(entry.workspaceId),
    payload: toEventPayload({
      id: row.id,
      type: entry.action,
      resource: entry.resource,
      createdAt: entry.at.toISOString(),
    }),
  };
}

/** Publishes committed events; one that cannot be published is dropped (the streams' backstop checks catch up). */
export async function publishSystemEvents(services: Services, events: readonly SystemEvent[]): Promise<void> {
  for (const { topic, payload } of events) {
    try {
      await services.events.publish(topic, payload);
    } catch {
      // See above.
    }
  }
}

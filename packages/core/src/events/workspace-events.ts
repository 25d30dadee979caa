/**
 * Workspace events: after a change to a workspace commits, a small notice goes out on the event
 * bus under `workspace:<id>`, so that subscribers on every server instance learn of it. The
 * notice repeats the audit event (same id, its action as the type); the audit log stays the
 * record, the notice only says "this happened".
 *
 * @module
 */
import type { EventPayload } from "./event-bus.js";

/** The bus topic of a workspace's events. */
export function workspaceTopic(workspaceId: string): string {
  return `workspace:${workspaceId}`;
}

/** What a workspace event carries on the bus. */
export interface WorkspaceEvent {
  /** The id of the audit event it repeats. */
  readonly id: string;
  /** The audit action, e.g. `workspace.update`, `service_account.create`. */
  readonly type: string;
  /** What changed, e.g. `service_account:<id>`. */
  readonly resource: string;
  /** RFC 3339. */
  readonly createdAt: string;
}

/** The event type after which a workspace's stream has nothing more to say. */
export const workspaceDeletedType = "workspace.delete";

/** The bus payload of an event. */
export function toEventPayload(event: WorkspaceEvent): EventPayload {
  return { id: event.id, type: event.type, resource: event.resource, createdAt: event.createdAt };
}

/** Reads a payload back; `undefined` for anything that is not a workspace event. */
export function workspaceEventOf(payload: EventPayload): WorkspaceEvent | undefined {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return undefined;
  const { id, type, resource, createdAt } = payload;
  if (
    typeof id !== "string" ||
    typeof type !== "string" ||
    typeof resource !== "string" ||
    typeof createdAt !== "string"
  ) {
    return undefined;
  }
  return { id, type, resource, createdAt };
}

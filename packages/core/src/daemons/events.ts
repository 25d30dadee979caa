/**
 * What core tells a daemon's control stream and a session's relay, over the event bus, so that
 * whichever server instance holds the stream delivers it:
 *
 * - topic `daemon:<daemonId>`: `notification` (a Notification to send), `session` (a session to
 *   push; registered in storage before it is published), `terminate` (end one of its SSH logins
 *   now; ended in storage before it is published), `sshBegun` (one of its SSH logins began: its
 *   control stream watches its logins), `deleted` (end the stream: the daemon's
 *   credentials no longer work);
 * - topic `session:<sessionId>`: `close` (send `close{reason}` and end both sides of the relay).
 *
 * Events are published only after the change they describe has committed.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type ConnectResponseSchema, DaemonStatus, Notification_EventType } from "@wap/api";
import type { EventPayload } from "../events/event-bus.js";
import type { Services } from "../operations/services.js";

export type NotificationKind = "STATUS" | "PRINCIPALS" | "CERTIFICATES" | "SYNC_REQUEST" | "REVOCATIONS";
export type WireStatusName = "PENDING" | "ACCEPTED" | "REJECTED";

/** An event on `daemon:<id>`. */
export type DaemonEvent =
  | { readonly kind: "notification"; readonly eventType: NotificationKind; readonly status?: WireStatusName }
  | {
      readonly kind: "session";
      readonly sessionId: string;
      readonly username: string;
      readonly userId: string;
    }
  | { readonly kind: "terminate"; readonly sessionId: string; readonly reason: string }
  | { readonly kind: "sshBegun" }
  | { readonly kind: "deleted" };

/** An event on `session:<id>`. */
export interface SessionEvent {
  readonly kind: "close";
  readonly sessionId: string;
  readonly reason: string;
}

/** The topic a daemon's control stream listens on. */
export function daemonTopic(daemonId: string): string {
  return `daemon:${daemonId}`;
}

/** The topic a session's relay listens on. */
export function sessionTopic(sessionId: string): string {
  return `session:${sessionId}`;
}

/** An event bound for one topic. */
export interface TopicEvent {
  readonly topic: string;
  readonly payload: DaemonEvent | SessionEvent;
}

export const notify = (
  daemonId: string,
  eventType: NotificationKind,
  status?: WireStatusName,
): TopicEvent => ({
  topic: daemonTopic(daemonId),
  payload: { kind: "notification", eventType, ...(status && { status }) },
});

export const terminateEvent = (daemonId: string, sessionId: string, reason: string): TopicEvent => ({
  topic: daemonTopic(daemonId),
  payload: { kind: "terminate", sessionId, reason },
});

export const closeEvent = (sessionId: string, reason: string): TopicEvent => ({
  topic: sessionTopic(sessionId),
  payload: { kind: "close", sessionId, reason },
});

/**
 * Publishes events whose change has committed. A notification that cannot be published is
 * dropped: the change stands, and the daemon catches up at its next sync (on reconnect, and every
 * 12 hours). Callers that must know (a session push) use `services.events.publish` directly.
 */
export async function publishCommitted(services: Services, events: readonly TopicEvent[]): Promise<void> {
  for (const { topic, payload } of events) {
    try {
      await services.events.publish(topic, payload as unknown as EventPayload);
    } catch {
      // See above: dropped on purpose.
    }
  }
}

const eventTypes: Record<NotificationKind, Notification_EventType> = {
  STATUS: Notification_EventType.STATUS,
  PRINCIPALS: Notification_EventType.PRINCIPALS,
  CERTIFICATES: Notification_EventType.CERTIFICATES,
  SYNC_REQUEST: Notification_EventType.SYNC_REQUEST,
  REVOCATIONS: Notification_EventType.REVOCATIONS,
};
const statuses: Record<WireStatusName, DaemonStatus> = {
  PENDING: DaemonStatus.PENDING,
  ACCEPTED: DaemonStatus.ACCEPTED,
  REJECTED: DaemonStatus.REJECTED,
};

/** Reads a `daemon:<id>` payload, or null when it is not one (a newer instance's event kind). */
export function parseDaemonEvent(payload: EventPayload): DaemonEvent | null {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  const p = payload as Record<string, EventPayload>;
  switch (p.kind) {
    case "notification": {
      if (typeof p.eventType !== "string" || !(p.eventType in eventTypes)) return null;
      const status =
        typeof p.status === "string" && p.status in statuses ? (p.status as WireStatusName) : undefined;
      return { kind: "notification", eventType: p.eventType as NotificationKind, ...(status && { status }) };
    }
    case "session":
      if (typeof p.sessionId !== "string" || typeof p.username !== "string" || typeof p.userId !== "string") {
        return null;
      }
      return { kind: "session", sessionId: p.sessionId, username: p.username, userId: p.userId };
    case "terminate":
      if (typeof p.sessionId !== "string" || typeof p.reason !== "string") return null;
      return { kind: "terminate", sessionId: p.sessionId, reason: p.reason };
    case "sshBegun":
      return { kind: "sshBegun" };
    case "deleted":
      return { kind: "deleted" };
    default:
      return null;
  }
}

/** Reads a `session:<id>` payload, or null when it is not one. */
export function parseSessionEvent(payload: EventPayload): SessionEvent | null {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
  const p = payload as Record<string, EventPayload>;
  if (p.kind !== "close" || typeof p.sessionId !== "string" || typeof p.reason !== "string") return null;
  return { kind: "close", sessionId: p.sessionId, reason: p.reason };
}

/**
 * The ConnectResponse a control stream sends for an event, or null for `deleted` (which ends the
 * stream instead) and `sshBegun` (which the stream keeps to itself).
 */
export function toConnectResponse(
  daemonId: string,
  event: DaemonEvent,
): MessageInitShape<typeof ConnectResponseSchema> | null {
  switch (event.kind) {
    case "notification":
      return {
        msg: {
          case: "notification",
          value: {
            eventType: eventTypes[event.eventType],
            daemonId,
            ...(event.status && { status: statuses[event.status] }),
          },
        },
      };
    case "session":
      return {
        msg: {
          case: "session",
          value: { sessionId: event.sessionId, username: event.username, userId: event.userId },
        },
      };
    case "terminate":
      return {
        msg: { case: "terminateSession", value: { sessionId: event.sessionId, reason: event.reason } },
      };
    case "sshBegun":
    case "deleted":
      return null;
  }
}

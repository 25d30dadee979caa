/**
 * An access request as the wire shows it: its state at the time of the answer, and every
 * transition.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccessRequestEventType, type AccessRequestSchema, AccessRequestState } from "@wap/api";
import type {
  AccessRequestRecord,
  AccessRequestEventType as EventType,
  AccessRequestState as State,
} from "../storage/access-requests.js";
import { stateAt } from "./rules.js";

export const stateToWire: Record<State, AccessRequestState> = {
  pending: AccessRequestState.PENDING,
  approved: AccessRequestState.APPROVED,
  denied: AccessRequestState.DENIED,
  expired: AccessRequestState.EXPIRED,
  withdrawn: AccessRequestState.WITHDRAWN,
  ended: AccessRequestState.ENDED,
};

const eventToWire: Record<EventType, AccessRequestEventType> = {
  requested: AccessRequestEventType.REQUESTED,
  approval: AccessRequestEventType.APPROVAL,
  approved: AccessRequestEventType.APPROVED,
  denied: AccessRequestEventType.DENIED,
  expired: AccessRequestEventType.EXPIRED,
  withdrawn: AccessRequestEventType.WITHDRAWN,
  used: AccessRequestEventType.USED,
  ended: AccessRequestEventType.ENDED,
};

/** The user ids who approved, in order (each once). */
export const approverIdsOf = (r: AccessRequestRecord) =>
  r.events.filter((e) => e.type === "approval").map((e) => e.actorId);

/** What the caller of an answer may do with the request now (see ./operations.ts). */
export interface CallerActions {
  readonly mayDecide: boolean;
  readonly mayWithdraw: boolean;
}

export function toAccessRequestMessage(
  r: AccessRequestRecord,
  at: Date,
  caller: CallerActions,
): MessageInitShape<typeof AccessRequestSchema> {
  return {
    id: r.id,
    workspaceId: r.workspaceId,
    targetId: r.targetId,
    login: r.login,
    requesterId: r.requesterId,
    reason: r.reason,
    duration: durationFromMs(r.durationSeconds * 1000),
    state: stateToWire[stateAt(r, at)],
    approvalsRequired: r.policy.approvalsRequired,
    approverIds: approverIdsOf(r),
    createdAt: timestampFromDate(r.createdAt),
    decideBy: timestampFromDate(r.decideBy),
    ...(r.approvedAt && { approvedAt: timestampFromDate(r.approvedAt) }),
    ...(r.endsAt && { endsAt: timestampFromDate(r.endsAt) }),
    events: r.events.map((e) => ({
      type: eventToWire[e.type],
      actorId: e.actorId,
      reason: e.reason,
      at: timestampFromDate(e.at),
    })),
    callerMayDecide: caller.mayDecide,
    callerMayWithdraw: caller.mayWithdraw,
  };
}

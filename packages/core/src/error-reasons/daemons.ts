/**
 * Reasons of daemons: enrolment, their signed requests, control streams and acceptance.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const daemonReasons = {
  DAEMON_NOT_FOUND: {
    code: "not_found",
    description: "The daemon does not exist in this workspace; check its id.",
  },
  INVALID_DAEMON_SIGNATURE: {
    code: "unauthenticated",
    description:
      "The daemon's request signature is invalid, stale or replayed, or the daemon is not enrolled; check its clock and key, or enrol again.",
  },
  INVALID_ENROLL_TOKEN: {
    code: "unauthenticated",
    description: "The enrolment token is invalid, expired or revoked; ask an administrator for a new one.",
  },
  DAEMON_ALREADY_ENROLLED: {
    code: "already_exists",
    description: "This daemon key is enrolled already; nothing to do.",
  },
  DAEMON_REJECTED: {
    code: ["permission_denied", "failed_precondition"],
    description: "An administrator rejected the daemon; it must be deleted before the machine enrols again.",
  },
  DAEMON_NOT_ACCEPTED: {
    code: "failed_precondition",
    description: "The daemon has not been accepted yet; an administrator must accept it first.",
  },
  DAEMON_HAS_NO_TARGET: {
    code: "failed_precondition",
    description: "The daemon serves no target (or its target was deleted); enrol it for a target.",
  },
  DAEMON_DELETED: {
    code: "unauthenticated",
    description: "The daemon was deleted while connected or syncing; enrol the machine again.",
  },
  DAEMON_STATUS_TRANSITION: {
    code: "failed_precondition",
    description: "A daemon's status moves only forward (pending to accepted or rejected); delete it instead.",
  },
  DAEMON_OFFLINE: {
    code: "failed_precondition",
    description: "The daemon has no open control stream; start it or wait until it reconnects.",
  },
  DAEMON_SYNC_PENDING: {
    code: "unavailable",
    description: "The daemon has not picked up a new grant yet and was asked to sync; retry shortly.",
  },
  DAEMON_SESSION_LIMIT: {
    code: "resource_exhausted",
    description: "The daemon has as many open sessions as it may; close one first.",
  },
  CONTROL_STREAM_BACKLOG: {
    code: "resource_exhausted",
    description:
      "The daemon did not read its control stream and messages piled up; the daemon should reconnect.",
  },
  DAEMON_CREDENTIALS_REQUIRED: {
    code: "unauthenticated",
    description:
      "A daemon stream was opened without a daemon signature; sign the request with the daemon's key.",
  },
  DAEMONS_ONLY: {
    code: "permission_denied",
    description: "A user or service account opened a stream meant for daemons; only enrolled daemons may.",
  },
} as const satisfies ReasonTable;

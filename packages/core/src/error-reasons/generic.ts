/**
 * The reason of an error raised without a more precise one: its code in capitals. The transports
 * also give these reasons to errors that never were platform errors (a protocol error of
 * connect-es, an internal fault).
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const genericReasons = {
  CANCELED: {
    code: "canceled",
    description:
      "The client cancelled the request or closed the connection; nothing to do unless it was not meant.",
  },
  UNKNOWN: {
    code: "unknown",
    description: "An error of unknown kind reached the transport; retry, and report it if it persists.",
  },
  INVALID_ARGUMENT: {
    code: "invalid_argument",
    description:
      "A request field is missing, out of bounds or malformed (see the field violations); fix the request.",
  },
  DEADLINE_EXCEEDED: {
    code: "deadline_exceeded",
    description: "The call's deadline passed before it finished; retry with a longer deadline.",
  },
  NOT_FOUND: {
    code: "not_found",
    description: "The resource does not exist or is not visible to the caller; check the id.",
  },
  ALREADY_EXISTS: {
    code: "already_exists",
    description: "A resource with the same unique key exists; pick another key or use the existing one.",
  },
  PERMISSION_DENIED: {
    code: "permission_denied",
    description: "The caller is known but may not do this; ask an administrator for the needed role.",
  },
  RESOURCE_EXHAUSTED: {
    code: "resource_exhausted",
    description: "A quota or limit was hit; wait or free some of the resource, then retry.",
  },
  FAILED_PRECONDITION: {
    code: "failed_precondition",
    description:
      "The system is not in a state that allows the call; change that state first (see the message).",
  },
  ABORTED: { code: "aborted", description: "A concurrent change won the race; read again and retry." },
  OUT_OF_RANGE: { code: "out_of_range", description: "A value is past the valid range; fix the request." },
  UNIMPLEMENTED: {
    code: "unimplemented",
    description:
      "The procedure or HTTP method is not served here; check the path, method and server version.",
  },
  INTERNAL: {
    code: "internal",
    description:
      "An internal fault, logged by the server with the request id; retry, and report the id if it persists.",
  },
  UNAVAILABLE: {
    code: "unavailable",
    description: "A dependency (usually the database) cannot be reached right now; retry with backoff.",
  },
  DATA_LOSS: { code: "data_loss", description: "Stored data is lost or corrupt; report it to the operator." },
  UNAUTHENTICATED: {
    code: "unauthenticated",
    description: "The request carries no valid credential; sign in or send a valid token.",
  },
} as const satisfies ReasonTable;

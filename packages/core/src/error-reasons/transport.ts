/**
 * Reasons of the transports, raised before an operation runs or around streams: routing, the
 * Connect protocol, request bodies, timeouts, rate limits, CSRF and event streams.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const transportReasons = {
  NO_ROUTE: {
    code: "not_found",
    description: "No REST route or WebSocket endpoint has this path; check it.",
  },
  METHOD_NOT_ALLOWED: {
    code: "unimplemented",
    description: "The path exists but not for this HTTP method; use one of those in the Allow header.",
  },
  UNSUPPORTED_PROTOCOL_VERSION: {
    code: "invalid_argument",
    description:
      "Connect-Protocol-Version (or the `connect` query parameter) names an unsupported version; send 1 (v1).",
  },
  INVALID_TIMEOUT: {
    code: "invalid_argument",
    description: "Connect-Timeout-Ms is not a positive integer of at most 10 digits; fix the header.",
  },
  BODY_TOO_LARGE: {
    code: "resource_exhausted",
    description: "The request body is larger than the server's limit (HTTP 413 on REST); send less.",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    code: "invalid_argument",
    description: "The body's Content-Type is not the one the endpoint reads (HTTP 415 on REST); send JSON.",
  },
  MALFORMED_BODY: {
    code: "invalid_argument",
    description: "The request body is not valid UTF-8; send it UTF-8 encoded.",
  },
  RATE_LIMITED: {
    code: "resource_exhausted",
    description:
      "The caller sent more requests than the rate limit allows; retry after the Retry-After header.",
  },
  RATE_LIMITER_UNAVAILABLE: {
    code: "unavailable",
    description: "The rate limiter's store cannot count the request right now; retry shortly.",
  },
  CSRF_CHECK_FAILED: {
    code: "permission_denied",
    description:
      "A cookie-authenticated request came from another site or without its CSRF header; send it from the console's origin.",
  },
  SHUTTING_DOWN: {
    code: "unavailable",
    description: "The server is shutting down; open the stream again (on another instance).",
  },
  EVENT_STREAM_OVERFLOW: {
    code: "resource_exhausted",
    description:
      "The client fell too far behind on an event stream; subscribe again and re-read what it missed.",
  },
} as const satisfies ReasonTable;

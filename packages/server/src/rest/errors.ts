/**
 * Errors on the REST paths: the HTTP status of each Connect code, and a google.rpc.Status body.
 *
 * @module
 */
import type { ErrorCode } from "@wap/core";

// The Connect protocol's HTTP mapping (REFERENCE §1.4).
const httpStatuses: Readonly<Record<ErrorCode, number>> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

// google.rpc.Code numbers.
const rpcCodes: Readonly<Record<ErrorCode, number>> = {
  canceled: 1,
  unknown: 2,
  invalid_argument: 3,
  deadline_exceeded: 4,
  not_found: 5,
  already_exists: 6,
  permission_denied: 7,
  resource_exhausted: 8,
  failed_precondition: 9,
  aborted: 10,
  out_of_range: 11,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  data_loss: 15,
  unauthenticated: 16,
};

/** The HTTP status for a Connect error code. */
export function httpStatusOf(code: ErrorCode): number {
  return httpStatuses[code];
}

/** The google.rpc.Code number for a Connect error code. */
export function rpcCodeOf(code: ErrorCode): number {
  return rpcCodes[code];
}

/** One entry of `details`: a JSON-encoded google.protobuf.Any (`@type` plus the message's fields). */
export interface RestErrorDetail {
  readonly "@type": string;
  readonly [field: string]: unknown;
}

/** A google.rpc.Status in its JSON form. */
export interface RestErrorBody {
  readonly code: number;
  readonly message: string;
  readonly details: readonly RestErrorDetail[];
}

/** The body of a REST error response; serialise it with JSON.stringify. */
export function restErrorBody(
  code: ErrorCode,
  message: string,
  details: readonly RestErrorDetail[] = [],
): RestErrorBody {
  return { code: rpcCodes[code], message, details: [...details] };
}

/**
 * Errors on the REST paths: the HTTP status of each Connect code, and a google.rpc.Status body.
 *
 * @module
 */
import type { ErrorCode } from "@wap/core";
import { connectCodeOf } from "../errors.js";
import { codeToHttpStatus } from "../lean/connect-protocol.js";

/**
 * The HTTP status for a Connect error code: connect-es's own table, the one the Connect paths
 * answer with, so REST and Connect never disagree.
 */
export function httpStatusOf(code: ErrorCode): number {
  return codeToHttpStatus(connectCodeOf(code));
}

/** The google.rpc.Code number for a Connect error code (connect-es's `Code` uses the same numbers). */
export function rpcCodeOf(code: ErrorCode): number {
  return connectCodeOf(code);
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
  return { code: rpcCodeOf(code), message, details: [...details] };
}

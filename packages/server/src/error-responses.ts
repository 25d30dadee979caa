/**
 * How a refusal is written on every entry that answers JSON over plain HTTP: the REST paths,
 * their NDJSON streams, the SSO browser endpoints, the billing webhook, the CRL endpoint and the
 * terminal's WebSocket handshake. The Connect, gRPC and gRPC-Web paths answer the same
 * {@link PublicError} as a ConnectError (connect-context.ts `answer`).
 *
 * One body (a google.rpc.Status in JSON, with ErrorInfo and BadRequest details), one status table
 * (connect-es's, so REST and Connect never disagree), never cached, and the code and reason noted
 * for the request's log line.
 *
 * @module
 */
import type { ErrorReason } from "@wap/core";
import { type AnswerNote, answerNoted, type PublicError, restDetailsOf } from "./errors.js";
import type { Logger } from "./logger.js";
import { BodyTooLargeError, UnsupportedMediaTypeError } from "./read-body.js";
import { httpStatusOf, type RestErrorBody, restErrorBody } from "./rest/index.js";

/** The google.rpc.Status JSON of a public error. */
export function errorStatusJson(answer: PublicError): RestErrorBody {
  return restErrorBody(answer.code, answer.message, restDetailsOf(answer));
}

/**
 * The HTTP status of a failure: its code's, except for a refused body, which HTTP has its own
 * statuses for (413 too large, 415 not JSON).
 */
export function failureStatus(error: unknown, answer: PublicError): number {
  if (error instanceof BodyTooLargeError) return 413;
  if (error instanceof UnsupportedMediaTypeError) return 415;
  return httpStatusOf(answer.code);
}

export interface ErrorResponseOptions {
  /** Default: the status of the answer's code. */
  readonly status?: number;
  /** Sent besides the answer's own headers (e.g. `Allow`, `Retry-After`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A public error as a JSON response; never stored by a cache. */
export function errorResponse(answer: PublicError, options: ErrorResponseOptions = {}): Response {
  return new Response(JSON.stringify(errorStatusJson(answer)), {
    status: options.status ?? httpStatusOf(answer.code),
    headers: {
      "Content-Type": "application/json",
      "Cache-Control": "no-store",
      ...answer.headers,
      ...options.headers,
    },
  });
}

/**
 * The answer to anything thrown while serving a request: translated (internal faults logged once,
 * with the request id), noted for the log line, and written as {@link errorResponse}.
 */
export function refusalResponse(
  note: AnswerNote,
  error: unknown,
  logger: Logger,
  options: ErrorResponseOptions = {},
): Response {
  const answer = answerNoted(note, error, logger);
  return errorResponse(answer, { status: failureStatus(error, answer), ...options });
}

/** A public error made here rather than translated from a PlatformError. */
export function publicError(code: PublicError["code"], message: string, reason: ErrorReason): PublicError {
  return { code, message, reason, violations: [], headers: {} };
}

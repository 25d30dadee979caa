/**
 * The HTTP status each code is answered with, as the Connect protocol maps them (connect-es's
 * `codeToHttpStatus`; the server's lean/connect-protocol.test.ts checks that the two agree). REST
 * paths answer a few refusals with a more precise status (405, 413, 415).
 *
 * @module
 */
import type { ErrorCode } from "../errors.js";

export const httpStatusOfCode: Readonly<Record<ErrorCode, number>> = {
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

/**
 * Error translation, in one place for every transport. A {@link PlatformError} goes out as it is
 * (code, message, reason, field violations, extra headers); a ConnectError raised by the protocol
 * layer keeps its code; anything else is an internal fault: logged with the request id and
 * answered `internal` without a word about its cause.
 *
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorCode, type ErrorReason, type FieldViolation, PlatformError } from "@wap/core";
import { genericReason } from "@wap/core/internal";
import { StorageUnavailableError } from "@wap/core/storage";
import { BadRequestSchema, ErrorInfoSchema, errorDomain } from "./error-details.js";
import type { Logger } from "./logger.js";
import type { RestErrorDetail } from "./rest/index.js";

/** What the caller is told about a failed request, whatever the transport. */
export interface PublicError {
  readonly code: ErrorCode;
  readonly message: string;
  /** Stable machine-readable condition (`ErrorInfo.reason`), declared in the core's reason tables. */
  readonly reason: ErrorReason;
  readonly violations: readonly FieldViolation[];
  /** Headers to send with the error (e.g. `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;
}

/** The table: platform error code -> Connect code (the numbers are gRPC's). */
const connectCodes: Readonly<Record<ErrorCode, Code>> = {
  canceled: Code.Canceled,
  unknown: Code.Unknown,
  invalid_argument: Code.InvalidArgument,
  deadline_exceeded: Code.DeadlineExceeded,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  out_of_range: Code.OutOfRange,
  unimplemented: Code.Unimplemented,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
  data_loss: Code.DataLoss,
  unauthenticated: Code.Unauthenticated,
};

const codeNames = new Map<Code, ErrorCode>(
  Object.entries(connectCodes).map(([name, code]) => [code, name as ErrorCode]),
);

/** The Connect `Code` of a platform error code. */
export function connectCodeOf(code: ErrorCode): Code {
  return connectCodes[code];
}

/** The platform error code of a Connect `Code`. */
export function errorCodeOf(code: Code): ErrorCode {
  return codeNames.get(code) ?? "unknown";
}

/** Where a request's answer is noted for its log line (the edge state of the request). */
export interface AnswerNote {
  readonly requestId: string;
  code?: ErrorCode | "ok";
  reason?: ErrorReason;
}

/**
 * {@link toPublicError} for a request whose answer is logged: the code and reason answered are
 * noted on `note`. Every entry answering a call (Connect, REST, NDJSON) notes its refusals here.
 */
export function answerNoted(note: AnswerNote, error: unknown, logger: Logger): PublicError {
  const answer = toPublicError(error, note.requestId, logger);
  note.code = answer.code;
  note.reason = answer.reason;
  return answer;
}

/**
 * Turns anything thrown while serving a request into what the caller may see. Faults that are
 * not the caller's business are logged here, once, with the request id.
 */
export function toPublicError(error: unknown, requestId: string, logger: Logger): PublicError {
  if (error instanceof PlatformError) {
    return {
      code: error.code,
      message: error.message,
      reason: error.reason,
      violations: error.violations,
      headers: error.headers,
    };
  }
  if (error instanceof StorageUnavailableError) {
    // Raised by core helpers called outside `platform.invoke` (the CLI login stream), which
    // would otherwise have translated it: a database outage is worth a retry, not `internal`.
    return {
      code: "unavailable",
      message: "the database is unavailable; retry shortly",
      reason: "UNAVAILABLE",
      violations: [],
      headers: {},
    };
  }
  if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) {
    // Raised by connect-node itself (bad framing, size limit, deadline): safe by construction.
    const code = errorCodeOf(error.code);
    return { code, message: error.rawMessage, reason: genericReason(code), violations: [], headers: {} };
  }
  logger.error("internal error", { requestId, error: describeFault(error) });
  return {
    code: "internal",
    message: `internal error (request id ${requestId})`,
    reason: "INTERNAL",
    violations: [],
    headers: {},
  };
}

/** The ConnectError that carries a public error over Connect, gRPC and gRPC-Web. */
export function toConnectError(error: PublicError): ConnectError {
  const details: ConstructorParameters<typeof ConnectError>[3] = [
    { desc: ErrorInfoSchema, value: { reason: error.reason, domain: errorDomain } },
  ];
  if (error.violations.length > 0) {
    details.push({
      desc: BadRequestSchema,
      value: {
        fieldViolations: error.violations.map((v) => ({ field: v.field, description: v.description })),
      },
    });
  }
  return new ConnectError(error.message, connectCodeOf(error.code), error.headers, details);
}

/** The JSON form of the same details, for google.rpc.Status bodies on REST paths. */
export function restDetailsOf(error: PublicError): RestErrorDetail[] {
  const details: RestErrorDetail[] = [
    { "@type": `type.googleapis.com/${ErrorInfoSchema.typeName}`, reason: error.reason, domain: errorDomain },
  ];
  if (error.violations.length > 0) {
    details.push({
      "@type": `type.googleapis.com/${BadRequestSchema.typeName}`,
      fieldViolations: error.violations.map((v) => ({ field: v.field, description: v.description })),
    });
  }
  return details;
}

/**
 * What the log says about a fault: its stack and causes. Total: whatever a driver or a bug
 * throws (a null-prototype object, a value whose conversion throws), this returns.
 */
export function describeFault(error: unknown): string {
  try {
    if (error instanceof Error) {
      const cause = error.cause === undefined ? "" : `\ncaused by: ${describeFault(error.cause)}`;
      return `${error.stack ?? `${error.name}: ${error.message}`}${cause}`;
    }
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

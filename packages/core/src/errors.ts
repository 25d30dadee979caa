/**
 * Errors raised by core operations.
 *
 * Every error a caller can see is a {@link PlatformError}: a Connect code, a message that is safe
 * to show to the caller, a stable machine-readable `reason`, and optional details. Reasons are
 * declared by area in ./error-reasons; a constructor takes only a reason declared for its code.
 * Anything else thrown inside an operation is an internal fault: the server logs it and answers
 * `internal` with a generic message.
 *
 * @module
 */

import type { ErrorReason, ReasonFor } from "./error-reasons/registry.js";

/** The Connect error codes, as the protocol names them on the wire. */
export const errorCodes = [
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
] as const;

/** One of the sixteen Connect error codes. */
export type ErrorCode = (typeof errorCodes)[number];

/** One field that failed validation: a dotted path into the request (`userMaxTtl`, `tags.2`) and why. */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

/** Options shared by every platform error of code `C`. */
export interface PlatformErrorOptions<C extends ErrorCode = ErrorCode> {
  /**
   * Stable identifier of the condition, e.g. `CERTIFICATE_AUTHORITY_NAME_TAKEN`, declared for
   * code `C` in ./error-reasons. Clients may switch on it. Without it: the code in capitals.
   */
  readonly reason?: ReasonFor<C>;
  /** Per-field problems (validation errors only). */
  readonly violations?: readonly FieldViolation[];
  /** Extra headers the transport should send with the error (e.g. `Retry-After`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The internal cause. Logged by the server, never sent to the caller. */
  readonly cause?: unknown;
}

/** The base class of every error an operation reports to its caller. */
/**
 * Marks every PlatformError, whichever copy of this module made it: an application that ends up
 * with two copies of @wap/core (two versions, or source and build) still recognises the other's
 * errors, which a bare `instanceof` would not.
 */
const BRAND = Symbol.for("@wap/core.PlatformError");

export class PlatformError<C extends ErrorCode = ErrorCode> extends Error {
  /**
   * `instanceof PlatformError` holds for any copy's PlatformError; `instanceof` a subclass holds
   * for that copy's subclass, or another copy's error of the same class name.
   */
  // `this` is the class asked about: PlatformError itself or one of its subclasses.
  // biome-ignore-start lint/complexity/noThisInStatic: see above
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== "object" || value === null || !(BRAND in value)) return false;
    return this === PlatformError || (value as { name?: unknown }).name === this.name;
  }
  // biome-ignore-end lint/complexity/noThisInStatic: see above

  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
  readonly violations: readonly FieldViolation[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: C, message: string, options: PlatformErrorOptions<C> = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.reason = options.reason ?? genericReason(code);
    this.violations = options.violations ?? [];
    this.headers = options.headers ?? {};
  }
}

/** The reason of an error of `code` raised without one: the code in capitals. */
export function genericReason<C extends ErrorCode>(code: C): Uppercase<C> & ReasonFor<C> {
  return code.toUpperCase() as Uppercase<C> & ReasonFor<C>;
}

/** The request is malformed: a field is missing, out of bounds or of the wrong shape. */
export class InvalidArgumentError extends PlatformError<"invalid_argument"> {
  constructor(message: string, options: PlatformErrorOptions<"invalid_argument"> = {}) {
    super("invalid_argument", message, { reason: "INVALID_ARGUMENT", ...options });
  }
}

/** The named resource does not exist, or the caller may not know that it exists. */
export class NotFoundError extends PlatformError<"not_found"> {
  constructor(message: string, options: PlatformErrorOptions<"not_found"> = {}) {
    super("not_found", message, { reason: "NOT_FOUND", ...options });
  }
}

/** A resource with the same unique key exists already. */
export class AlreadyExistsError extends PlatformError<"already_exists"> {
  constructor(message: string, options: PlatformErrorOptions<"already_exists"> = {}) {
    super("already_exists", message, { reason: "ALREADY_EXISTS", ...options });
  }
}

/** The caller is known but not allowed to do this. */
export class PermissionDeniedError extends PlatformError<"permission_denied"> {
  constructor(message: string, options: PlatformErrorOptions<"permission_denied"> = {}) {
    super("permission_denied", message, { reason: "PERMISSION_DENIED", ...options });
  }
}

/** The request carries no valid credential. */
export class UnauthenticatedError extends PlatformError<"unauthenticated"> {
  constructor(message: string, options: PlatformErrorOptions<"unauthenticated"> = {}) {
    super("unauthenticated", message, { reason: "UNAUTHENTICATED", ...options });
  }
}

/** The request is well-formed but the system is not in a state that allows it. */
export class FailedPreconditionError extends PlatformError<"failed_precondition"> {
  constructor(message: string, options: PlatformErrorOptions<"failed_precondition"> = {}) {
    super("failed_precondition", message, { reason: "FAILED_PRECONDITION", ...options });
  }
}

/** A quota or rate limit was hit. */
export class ResourceExhaustedError extends PlatformError<"resource_exhausted"> {
  constructor(message: string, options: PlatformErrorOptions<"resource_exhausted"> = {}) {
    super("resource_exhausted", message, { reason: "RESOURCE_EXHAUSTED", ...options });
  }
}

/** A dependency (usually the database) cannot be reached; the request may be retried. */
export class UnavailableError extends PlatformError<"unavailable"> {
  constructor(message: string, options: PlatformErrorOptions<"unavailable"> = {}) {
    super("unavailable", message, { reason: "UNAVAILABLE", ...options });
  }
}

/** The caller's deadline passed or the request was cancelled before the operation finished. */
export class DeadlineExceededError extends PlatformError<"deadline_exceeded"> {
  constructor(message: string, options: PlatformErrorOptions<"deadline_exceeded"> = {}) {
    super("deadline_exceeded", message, { reason: "DEADLINE_EXCEEDED", ...options });
  }
}

/** The operation exists in the contract but this server does not implement it yet. */
export class UnimplementedError extends PlatformError<"unimplemented"> {
  constructor(message: string, options: PlatformErrorOptions<"unimplemented"> = {}) {
    super("unimplemented", message, { reason: "UNIMPLEMENTED", ...options });
  }
}

/** True when `value` is an error the caller may see as it is (made by any copy of @wap/core). */
export function isPlatformError(value: unknown): value is PlatformError {
  return value instanceof PlatformError;
}

/** Why a stream ended early: the server is stopping; the client should open it again (on another instance). */
export function shuttingDownError(): UnavailableError {
  return new UnavailableError("the server is shutting down; open the stream again", {
    reason: "SHUTTING_DOWN",
  });
}

/**
 * How the agent describes failures, and the ones that end it.
 *
 * @module
 */
import { Code, ConnectError } from "@wap/client";

/**
 * What went wrong, in words: the server's own message, with what kind of failure it is said
 * plainly (never a gRPC code name such as `FailedPrecondition`).
 */
export function explain(error: unknown): string {
  if (error instanceof ConnectError) {
    const said = error.rawMessage || "no message";
    switch (error.code) {
      case Code.Unavailable:
        return `the server cannot be reached: ${said}`;
      case Code.DeadlineExceeded:
        return `the server did not answer in time: ${said}`;
      case Code.Canceled:
        return `the call was cancelled: ${said}`;
      case Code.Internal:
      case Code.Unknown:
      case Code.DataLoss:
        return `the server failed: ${said}`;
      default:
        return `the server refused: ${said}`;
    }
  }
  return error instanceof Error ? error.message : String(error);
}

/** Exit codes of `wap-agent run` (systemd does not restart after 3 and 4: nothing would change). */
export const exitCodes = {
  stopped: 0,
  failed: 1,
  usage: 2,
  /** The server refused the agent's key: its daemon was deleted, or the key is not the enrolled one. */
  refused: 3,
  rejected: 4,
} as const;

/** There is no enrolment in the state folder. */
export class NotEnrolledError extends Error {
  constructor(stateDir: string) {
    super(
      `this machine is not enrolled (no enrolment in ${stateDir}): run \`wap-agent enroll --server <url> --token <token>\` first`,
    );
    this.name = "NotEnrolledError";
  }
}

/**
 * A file the agent keeps exists but cannot be read (EACCES, EIO, EISDIR...). Only a missing file
 * means "none yet": anything else stops the agent, which never replaces what it could not read
 * (its key is its enrolled identity).
 */
export class UnreadableFileError extends Error {
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    const reason =
      (cause as NodeJS.ErrnoException).code ?? (cause instanceof Error ? cause.message : String(cause));
    super(
      `cannot read ${path} (${reason}); the agent stops rather than replace it: fix the file or its permissions`,
      { cause },
    );
    this.name = "UnreadableFileError";
  }
}

export function isUnauthenticated(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unauthenticated;
}

/** Whether the server answered, refusing (as opposed to not being reached in time). */
export function isRefusal(error: unknown): boolean {
  return (
    error instanceof ConnectError &&
    [
      Code.PermissionDenied,
      Code.FailedPrecondition,
      Code.InvalidArgument,
      Code.Unauthenticated,
      Code.NotFound,
      Code.ResourceExhausted,
    ].includes(error.code)
  );
}

/**
 * How the agent describes failures, and the ones that end it.
 *
 * @module
 */
import { Code, ConnectError } from "@wap/client";

export function explain(error: unknown): string {
  if (error instanceof ConnectError) return `${Code[error.code]}: ${error.rawMessage}`;
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

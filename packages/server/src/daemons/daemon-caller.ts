/**
 * Who may open the daemon streams (control and session): only an enrolled daemon signing the
 * request.
 *
 * @module
 */
import { type Caller, type DaemonCaller, PermissionDeniedError, UnauthenticatedError } from "@wap/core";

/** The caller as a daemon, or why it may not open the daemon's `stream`. */
export function daemonCallerOf(caller: Caller, stream: "control stream" | "session stream"): DaemonCaller {
  if (caller.kind === "daemon") return caller;
  if (caller.kind === "anonymous") {
    throw new UnauthenticatedError(
      `the ${stream} is for enrolled daemons: sign the request with the daemon's key (Authorization: Platform ...)`,
      { reason: "DAEMON_CREDENTIALS_REQUIRED" },
    );
  }
  throw new PermissionDeniedError(`a ${caller.kind.replace("_", " ")} may not open a daemon ${stream}`, {
    reason: "DAEMONS_ONLY",
  });
}

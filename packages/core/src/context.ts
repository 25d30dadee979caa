/**
 * Who is calling, and the facts of one call, as operations see them.
 *
 * @module
 */
import { DeadlineExceededError } from "./errors.js";

/** The roles a workspace member or service account can hold, strongest first. */
export const workspaceRoles = ["owner", "admin", "editor", "viewer"] as const;
export type WorkspaceRole = (typeof workspaceRoles)[number];

/** A caller with no credential (public operations only). */
export interface AnonymousCaller {
  readonly kind: "anonymous";
}

/** A signed-in person, from an access token or the `session` cookie. */
export interface UserCaller {
  readonly kind: "user";
  readonly userId: string;
  /** The login session (refresh-token family) the access token belongs to. */
  readonly sessionId: string;
}

/** A service account, from its bearer token. It acts inside its one workspace with its role. */
export interface ServiceAccountCaller {
  readonly kind: "service_account";
  readonly serviceAccountId: string;
  readonly workspaceId: string;
  readonly role: Extract<WorkspaceRole, "viewer" | "editor">;
}

/** An enrolled agent daemon, from a signed challenge. */
export interface DaemonCaller {
  readonly kind: "daemon";
  readonly daemonId: string;
  readonly workspaceId: string;
}

export type Caller = AnonymousCaller | UserCaller | ServiceAccountCaller | DaemonCaller;
export type CallerKind = Caller["kind"];

/** The facts of one call that operations may use. */
export interface CallContext {
  readonly caller: Caller;
  /** Correlates log lines and audit events of one request. */
  readonly requestId: string;
  /** Aborted when the client goes away or its deadline passes. */
  readonly signal: AbortSignal;
  /** The client's address as the server saw it (after trusted proxies), for audit and rate limits. */
  readonly ipAddress: string;
  readonly userAgent: string;
  /**
   * Request headers an operation reads itself, names in lower case (e.g. EnrollDaemon reads
   * `platform-daemon-hostname`). Transports may pass only the ones operations use.
   */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Throws when the caller has gone away or its deadline passed. Long operations call it before
 * they commit, so a write is never made for a request that has already been answered.
 */
export function throwIfCancelled(ctx: Pick<CallContext, "signal">): void {
  if (ctx.signal.aborted) throw new DeadlineExceededError("the request was cancelled or its deadline passed");
}

/** The anonymous caller. */
export const anonymous: AnonymousCaller = Object.freeze({ kind: "anonymous" });

/** A context for calls made from code (scripts, tests, embedding applications). */
export function createCallContext(
  caller: Caller,
  options: Partial<Omit<CallContext, "caller">> = {},
): CallContext {
  return {
    caller,
    requestId: options.requestId ?? "local",
    signal: options.signal ?? new AbortController().signal,
    ipAddress: options.ipAddress ?? "",
    userAgent: options.userAgent ?? "",
    ...(options.headers && { headers: options.headers }),
  };
}

/** A stable string naming the caller, for audit rows and rate-limit keys. */
export function actorOf(caller: Caller): { actorType: string; actorId: string } {
  switch (caller.kind) {
    case "anonymous":
      return { actorType: "anonymous", actorId: "" };
    case "user":
      return { actorType: "user", actorId: caller.userId };
    case "service_account":
      return { actorType: "service_account", actorId: caller.serviceAccountId };
    case "daemon":
      return { actorType: "daemon", actorId: caller.daemonId };
  }
}

/**
 * Long-lived streams and relays end when the right they were opened under goes away. A stream
 * (SubscribeWorkspaceEvents, a browser terminal...) checks its caller's access again:
 *
 * - after every change in its workspace (`workspace:<id>`: a member removed, a grant revoked, a
 *   service account deleted, RevokeAllAccess...), at most every {@link minRecheckMs};
 * - after every change to an account (`accounts`: sign-out, a password reset, an account
 *   deleted...) that names its subject;
 * - every {@link backstopMs} whatever happens (a session that simply expired).
 *
 * The events cross instances on the bus, so a revocation made on one instance ends the streams
 * of every instance. The check itself is the one the stream passed when it opened (its caller
 * resolved anew from storage, then its access), never a list of which changes revoke what.
 *
 * @module
 */
import type { Caller } from "../context.js";
import { PlatformError, UnauthenticatedError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";
import type { EventPayload } from "./event-bus.js";
import { throttledCheck } from "./throttled-check.js";
import { workspaceTopic } from "./workspace-events.js";

/** The bus topic of changes to accounts (not in any workspace): sign-outs, resets, deletions. */
export const accountsTopic = "accounts";

/**
 * Stages the notice of a change to an account (audited outside any workspace) with the call of
 * `tx`: who acted, and on what. Streams of that subject check their access when it commits.
 */
export function stageAccountChange(
  services: Pick<Services, "state">,
  tx: Repositories,
  actorId: string,
  resource: string,
): void {
  services.state.afterCommit.stage(tx, { topic: accountsTopic, payload: { actor: actorId, resource } });
}

/** Workspace events closer together than this are checked once. */
export const minRecheckMs = 250;
/** A stream is checked at least this often, events or not. */
export const backstopMs = 60_000;

/** Codes of a check that failed because the right is gone (not because storage is down). */
const revokedCodes = new Set(["unauthenticated", "permission_denied", "not_found", "failed_precondition"]);

export interface AccessWatchOptions {
  /** The workspace the stream is in, or "" for none. */
  readonly workspaceId: string;
  /** The user or service-account id the stream runs for. */
  readonly subjectId: string;
  /** Throws when the access the stream was opened under is gone. */
  readonly recheck: () => Promise<void>;
  /** Called once, with the error to end the stream with. */
  readonly onRevoked: (error: PlatformError) => void;
  /**
   * Told when a check could not be made (storage unavailable): the stream goes on, and the next
   * trigger checks again. Default: ignore.
   */
  readonly onCheckFailed?: (error: unknown) => void;
  /** Overrides {@link backstopMs} (tests). */
  readonly backstopMs?: number;
}

/**
 * Watches a stream's access until the returned function is called, or until it is revoked
 * (then `onRevoked` runs once and the watch stops by itself).
 */
export async function watchAccess(services: Services, options: AccessWatchOptions): Promise<() => void> {
  const checker = throttledCheck(
    async () => {
      try {
        await options.recheck();
      } catch (error) {
        if (!checker.stopped && error instanceof PlatformError && revokedCodes.has(error.code)) {
          stop();
          options.onRevoked(revocationOf(error));
          return;
        }
        // Anything else (storage unavailable) proves nothing: the next trigger checks again.
        if (!checker.stopped) options.onCheckFailed?.(error);
      }
    },
    { minIntervalMs: minRecheckMs, backstopMs: options.backstopMs ?? backstopMs },
  );
  const schedule = () => checker.schedule();

  const unsubscribers: (() => void)[] = [];
  try {
    if (options.workspaceId !== "") {
      unsubscribers.push(await services.events.subscribe(workspaceTopic(options.workspaceId), schedule));
    }
    unsubscribers.push(
      await services.events.subscribe(accountsTopic, (payload) => {
        if (mentions(payload, options.subjectId)) schedule();
      }),
    );
  } catch (error) {
    stop();
    throw error;
  }

  function stop() {
    if (checker.stopped) return;
    checker.stop();
    for (const unsubscribe of unsubscribers) unsubscribe();
  }
  return stop;
}

/** The caller as storage has it now: the session still open, the service account still there. */
export async function currentCaller(services: Services, caller: Caller): Promise<Caller> {
  const now = services.clock.now();
  switch (caller.kind) {
    case "user": {
      const session = await services.storage.authSessions.findById(caller.sessionId);
      if (
        !session ||
        session.revokedAt !== null ||
        session.expiresAt <= now ||
        session.userId !== caller.userId
      ) {
        throw new UnauthenticatedError("this session has ended; sign in again", { reason: "SESSION_ENDED" });
      }
      return caller;
    }
    case "service_account": {
      const account = await services.storage.serviceAccounts.findByIdForAuthentication(
        caller.serviceAccountId,
      );
      if (!account || (account.expiresAt !== null && account.expiresAt <= now)) {
        throw new UnauthenticatedError("the service account was deleted or has expired", {
          reason: "INVALID_SERVICE_ACCOUNT_TOKEN",
        });
      }
      return { ...caller, role: account.role };
    }
    default:
      return caller;
  }
}

/** The id of the subject a caller stands for, or "" for anonymous callers and daemons. */
export function subjectIdOf(caller: Caller): string {
  if (caller.kind === "user") return caller.userId;
  if (caller.kind === "service_account") return caller.serviceAccountId;
  return "";
}

function mentions(payload: EventPayload, subjectId: string): boolean {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return false;
  const { actor, resource } = payload;
  return actor === subjectId || (typeof resource === "string" && resource.endsWith(`:${subjectId}`));
}

/** The error a revoked stream ends with: what ended, in words a client can act on. */
function revocationOf(error: PlatformError): PlatformError {
  const code = error.code === "unauthenticated" ? "unauthenticated" : "permission_denied";
  return new PlatformError(code, `the access this stream was opened with has ended: ${error.message}`, {
    reason: "ACCESS_REVOKED",
    cause: error,
  });
}

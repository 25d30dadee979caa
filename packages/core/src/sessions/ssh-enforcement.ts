/**
 * Live SSH logins end when the access they began under goes away. The control stream of a
 * daemon (on whichever instance holds it) watches the daemon's live logins:
 *
 * - after every change in the daemon's workspace (`workspace:<id>`: a grant removed, a member
 *   removed, a certificate revoked, a service account deleted...), at most every
 *   {@link minRecheckMs}, while the daemon has live logins;
 * - after every change to an account (`accounts`) that names a subject with a live login;
 * - when one of its logins begins (`sshBegun` on `daemon:<id>`, which the control stream passes
 *   on), when the stream opens (what changed while the daemon was away), and every
 *   {@link backstopMs} whatever happens (a certificate that expired).
 *
 * A daemon with no live login costs nothing on workspace events: with thousands of daemons in a
 * workspace, a change there queries storage only for those with logins.
 *
 * Each check is {@link checkSshAccess} for every live login. A login that fails it is ended in
 * storage (by `system`, with the reason), audited `ssh_session.end`, and the daemon is told
 * `terminateSession{id, reason}` on `daemon:<id>`, which its control stream sends.
 *
 * @module
 */
import { auditSystemChange, publishSystemEvents } from "../access-requests/system-changes.js";
import { publishCommitted, terminateEvent } from "../daemons/events.js";
import { PlatformError } from "../errors.js";
import { accountsTopic, backstopMs, minRecheckMs } from "../events/access-watch.js";
import type { EventPayload } from "../events/event-bus.js";
import { throttledCheck } from "../events/throttled-check.js";
import { workspaceTopic } from "../events/workspace-events.js";
import type { Services } from "../operations/services.js";
import { checkSshAccess } from "./ssh-sessions.js";

/** Codes of a check that failed because the right is gone (not because storage is down). */
const revokedCodes = new Set(["permission_denied", "not_found", "unauthenticated", "failed_precondition"]);

/** Ends the daemon's live logins whose access is gone; returns how many it ended. */
export async function enforceSshAccess(
  services: Services,
  workspaceId: string,
  daemonId: string,
): Promise<{ ended: number; subjects: Set<string> }> {
  const storage = services.storage;
  const now = services.clock.now();
  const live = await storage.sshSessions.listLiveByDaemon(workspaceId, daemonId);
  const subjects = new Set<string>();
  if (live.length === 0) return { ended: 0, subjects };
  const daemon = await storage.daemons.findById(workspaceId, daemonId);
  let ended = 0;
  for (const session of live) {
    let reason: string | undefined;
    let code = "";
    if (!daemon) {
      reason = "the daemon was deleted";
      code = "DAEMON_DELETED";
    } else {
      try {
        await checkSshAccess(storage, daemon, session, now);
        subjects.add(session.subjectId);
        continue;
      } catch (error) {
        if (!(error instanceof PlatformError) || !revokedCodes.has(error.code)) throw error;
        reason = error.message;
        code = error.reason;
      }
    }
    const event = await storage.transaction(async (tx) => {
      const closed = await tx.sshSessions.end(workspaceId, session.id, {
        at: now,
        exitStatus: null,
        bytesIn: session.bytesIn,
        bytesOut: session.bytesOut,
        endedBy: `system:${code}`,
        reason: `access revoked: ${reason}`,
      });
      if (!closed) return null;
      return auditSystemChange(tx, services, {
        workspaceId,
        action: "ssh_session.end",
        resource: `ssh_session:${session.id}`,
        at: now,
      });
    });
    if (!event) continue;
    ended++;
    await publishCommitted(services, [terminateEvent(daemonId, session.id, `access revoked: ${reason}`)]);
    await publishSystemEvents(services, [event]);
  }
  return { ended, subjects };
}

export interface SshWatchOptions {
  readonly workspaceId: string;
  readonly daemonId: string;
  /** Told when a check could not be made (storage unavailable); the next trigger checks again. */
  readonly onCheckFailed?: (error: unknown) => void;
  /** Overrides {@link backstopMs} (tests). */
  readonly backstopMs?: number;
}

export interface SshWatch {
  /** A login of the daemon began: check from now on. */
  loginBegun(): void;
  stop(): void;
}

/** Watches a daemon's live SSH logins until `stop` is called. */
export async function watchSshSessions(services: Services, options: SshWatchOptions): Promise<SshWatch> {
  const { workspaceId, daemonId } = options;
  let subjects = new Set<string>();
  /** Whether the last check found live logins (or one began since). */
  let live = true;
  let begun = 0;

  const checker = throttledCheck(
    async () => {
      const begunBefore = begun;
      try {
        subjects = (await enforceSshAccess(services, workspaceId, daemonId)).subjects;
        live = subjects.size > 0 || begun !== begunBefore;
      } catch (error) {
        if (!checker.stopped) options.onCheckFailed?.(error);
      }
    },
    { minIntervalMs: minRecheckMs, backstopMs: options.backstopMs ?? backstopMs },
  );
  const schedule = () => checker.schedule();

  const unsubscribers: (() => void)[] = [];
  try {
    unsubscribers.push(
      await services.events.subscribe(workspaceTopic(workspaceId), () => {
        if (live) schedule();
      }),
      await services.events.subscribe(accountsTopic, (payload) => {
        if (mentionsAny(payload, subjects)) schedule();
      }),
    );
  } catch (error) {
    checker.stop();
    for (const unsubscribe of unsubscribers) unsubscribe();
    throw error;
  }
  checker.runNow();

  return {
    loginBegun() {
      begun++;
      live = true;
      schedule();
    },
    stop() {
      if (checker.stopped) return;
      checker.stop();
      for (const unsubscribe of unsubscribers) unsubscribe();
    },
  };
}

/** Whether an `accounts` event is about one of `subjects` (as actor or resource). */
function mentionsAny(payload: EventPayload, subjects: ReadonlySet<string>): boolean {
  if (subjects.size === 0 || typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return false;
  }
  const { actor, resource } = payload as Record<string, EventPayload>;
  if (typeof actor === "string" && subjects.has(actor)) return true;
  if (typeof resource !== "string") return false;
  const id = resource.slice(resource.indexOf(":") + 1);
  return subjects.has(id) || subjects.has(resource);
}

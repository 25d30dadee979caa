/**
 * A terminal session's life, as the server's streams drive it:
 *
 *     CreateSession -> pending --(daemon's session stream sends `ready`)--> open --> closed
 *                        \--(no `ready` within sessionReadyTimeoutSeconds)--> closed ("abandoned")
 *
 * - {@link claimSession}: the daemon's session stream sent `ready{sessionId, username, userId}`;
 *   the session must be pending, fresh, created for this authenticated daemon, and match.
 * - {@link endSession}: either side of the relay ended (stream cancelled or reset, browser gone,
 *   `exited`); closes the session and tells the other side through `session:<id>`.
 * - Abandonment is lazy (a stale pending session can never be claimed and is not listed) and
 *   also swept: the server calls {@link abandonStaleSessions} every few seconds so storage says
 *   so too and relays waiting for the daemon hear `close`.
 * - {@link attachSession}: a browser attaches to the relay (the WebSocket endpoint); only the
 *   subject the session runs for may.
 * - Relaying across instances: `ready` lands on one server instance, which records itself as the
 *   session's relay when it claims it ({@link SessionRelayRecord}); a browser attaching through
 *   another instance reads {@link sessionRelayOf} and is forwarded there. An open session whose
 *   relaying instance lost its lease (it stopped or died, and the daemon's stream with it) is
 *   closed by {@link abandonStaleSessions} too.
 *
 * @module
 */
import type { Caller, DaemonCaller } from "../context.js";
import { closeEvent, publishCommitted } from "../daemons/events.js";
import { principalMapOf } from "../daemons/sync.js";
import { NotFoundError, PermissionDeniedError, UnauthenticatedError } from "../errors.js";
import { currentCaller } from "../events/access-watch.js";
import type { Services } from "../operations/services.js";
import type { DaemonSessionRecord, SessionRelayRecord } from "../storage/daemon-sessions.js";

/** How long a pushed session waits for the daemon's `ready` (it normally comes within milliseconds). */
export const sessionReadyTimeoutSeconds = 30;
export const abandonedReason = "the daemon did not open the session in time";
export const orphanedReason = "the server relaying the session stopped";

/** The oldest creation time a pending session may have and still be claimed. */
export function claimableSince(now: Date): Date {
  return new Date(now.getTime() - sessionReadyTimeoutSeconds * 1000);
}

/** True when the session is pending or open, and a pending one is not stale. */
export function isLive(session: DaemonSessionRecord, now: Date): boolean {
  if (session.state === "open") return true;
  return session.state === "pending" && session.createdAt >= claimableSince(now);
}

const noSuchSession = (id: string) =>
  new NotFoundError(`no pending session ${id} for this daemon`, { reason: "SESSION_NOT_FOUND" });

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Matches a session stream's `ready` to its pending session and opens it, relayed by `relay`
 * (the instance holding the stream) when given. Throws `not_found` for another daemon's, an
 * unknown, a stale or an already claimed session, and `permission_denied` (closing the session)
 * when `username` or `userId` differ from what was pushed.
 */
export async function claimSession(
  services: Services,
  caller: DaemonCaller,
  ready: { readonly sessionId: string; readonly username: string; readonly userId: string },
  relay?: SessionRelayRecord,
): Promise<DaemonSessionRecord> {
  const now = services.clock.now();
  const id = ready.sessionId.toLowerCase();
  if (!uuidPattern.test(id)) throw noSuchSession(ready.sessionId);
  const session = await services.storage.daemonSessions.open(
    caller.daemonId,
    id,
    now,
    claimableSince(now),
    relay,
  );
  if (!session) throw noSuchSession(id);
  if (session.username !== ready.username || session.userId !== ready.userId.toLowerCase()) {
    await endSession(
      services,
      session.workspaceId,
      session.id,
      "the daemon opened the session for someone else",
    );
    throw new PermissionDeniedError("ready does not match the session that was pushed", {
      reason: "SESSION_MISMATCH",
    });
  }
  return session;
}

/**
 * Closes a session (idempotent) and, if this call closed it, tells both sides of its relay on
 * `session:<id>`. Returns the closed record, or null when it was closed already.
 */
export async function endSession(
  services: Services,
  workspaceId: string,
  sessionId: string,
  reason: string,
): Promise<DaemonSessionRecord | null> {
  const closed = await services.storage.daemonSessions.close(
    workspaceId,
    sessionId,
    reason,
    services.clock.now(),
  );
  if (closed) await publishCommitted(services, [closeEvent(closed.id, reason)]);
  return closed;
}

/**
 * Closes pending sessions nobody claimed in time, and open sessions whose relaying instance is
 * gone (at most `limit` of each per call); returns how many.
 */
export async function abandonStaleSessions(
  services: Services,
  options: { limit?: number } = {},
): Promise<number> {
  const now = services.clock.now();
  const limit = options.limit ?? 500;
  const sessions = services.storage.daemonSessions;
  const stale = await sessions.abandonPending(claimableSince(now), abandonedReason, now, limit);
  const orphaned = await sessions.closeOrphaned(now, orphanedReason, now, limit);
  await publishCommitted(services, [
    ...stale.map((s) => closeEvent(s.id, abandonedReason)),
    ...orphaned.map((s) => closeEvent(s.id, orphanedReason)),
  ]);
  return stale.length + orphaned.length;
}

/** Where a session stands for a browser waiting to reach it. */
export type SessionRelayStatus =
  | { readonly kind: "pending" }
  | { readonly kind: "open"; readonly relay: SessionRelayRecord }
  | { readonly kind: "closed"; readonly reason: string };

/**
 * Whether the session is still waiting for its daemon, is open and relayed (by whom), or is
 * over (why). A pending session past its `ready` timeout is over, whether or not the sweep has
 * closed it yet; an open one without a relay (claimed with none) cannot be reached.
 */
export async function sessionRelayOf(
  services: Services,
  workspaceId: string,
  sessionId: string,
): Promise<SessionRelayStatus> {
  const found = await services.storage.daemonSessions.findRelay(workspaceId, sessionId.toLowerCase());
  if (!found) return { kind: "closed", reason: "the session does not exist" };
  switch (found.state) {
    case "pending":
      return found.createdAt >= claimableSince(services.clock.now())
        ? { kind: "pending" }
        : { kind: "closed", reason: abandonedReason };
    case "open":
      return found.relay
        ? { kind: "open", relay: found.relay }
        : { kind: "closed", reason: "the session is not relayed by any server" };
    case "closed":
      return { kind: "closed", reason: found.closeReason };
  }
}

/**
 * The session a browser may attach to: live, and run for the caller (a user or service
 * account). Everything else is `not_found`, so ids of others' sessions reveal nothing.
 */
export async function attachSession(
  services: Services,
  caller: Caller,
  workspaceId: string,
  sessionId: string,
): Promise<DaemonSessionRecord> {
  const subject =
    caller.kind === "user"
      ? caller.userId
      : caller.kind === "service_account"
        ? caller.serviceAccountId
        : null;
  if (subject === null) throw new UnauthenticatedError("attaching to a session needs a signed-in user");
  // Still in the workspace: leaving it ends the right to the terminal too.
  const inWorkspace =
    caller.kind === "user"
      ? (await services.storage.members.find(workspaceId, caller.userId)) !== null
      : caller.kind === "service_account" && caller.workspaceId === workspaceId;
  const session = inWorkspace
    ? await services.storage.daemonSessions.findById(workspaceId, sessionId.toLowerCase())
    : null;
  if (!session || session.userId !== subject || !isLive(session, services.clock.now())) {
    throw new NotFoundError(`session ${sessionId} not found`, { reason: "SESSION_NOT_FOUND" });
  }
  return session;
}

/**
 * Checks again what attaching to a terminal needed, as storage has it now: the caller's session
 * (or service account) still valid, still in the workspace, the session still theirs and live,
 * and a grant of the daemon's target still letting them log in as its Unix account. Throws the
 * reason when any of it is gone (the terminal must end then).
 */
export async function recheckSessionAccess(
  services: Services,
  caller: Caller,
  workspaceId: string,
  sessionId: string,
): Promise<void> {
  const current = await currentCaller(services, caller);
  // Said plainly, where attaching would answer only "not found": the person was removed.
  if (
    current.kind === "user" &&
    (await services.storage.members.find(workspaceId, current.userId)) === null
  ) {
    throw new PermissionDeniedError("you are no longer a member of this workspace", {
      reason: "NO_LOGIN_GRANT",
    });
  }
  const session = await attachSession(services, current, workspaceId, sessionId);
  const daemon = await services.storage.daemons.findById(workspaceId, session.daemonId);
  const logins =
    daemon?.targetId == null
      ? undefined
      : await principalMapOf(services.storage, workspaceId, daemon.targetId, services.clock.now());
  if (!logins?.get(session.username)?.includes(session.userId)) {
    throw new PermissionDeniedError(`you may no longer log in as '${session.username}' on this daemon`, {
      reason: "NO_LOGIN_GRANT",
    });
  }
}

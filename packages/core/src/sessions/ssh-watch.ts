/**
 * Watching a live SSH login read-only (docs/sessions.md, "Watching an SSH login"): whoever may
 * manage the workspace's sessions and read its recordings follows what the login writes, as the daemon's agent records
 * it. The watch reads the login's recording from storage (so it works on any instance), from the
 * start and then each new append; a login that is not recorded cannot be watched. Opening a
 * watch is audited (`ssh_session.watch`, by the watcher).
 *
 * @module
 */
import { roleAllows } from "../access/permissions.js";
import { appendAudit, type RequestFacts } from "../audit/record.js";
import type { Caller } from "../context.js";
import {
  FailedPreconditionError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "../errors.js";
import { currentCaller } from "../events/access-watch.js";
import type { Services } from "../operations/services.js";
import type { SshSessionRecord } from "../storage/ssh-sessions.js";

/**
 * What watching needs: managing the workspace's sessions, and reading others' recordings (a
 * watch shows what a recording of the login would, live), so owners and admins.
 */
const watchPermissions = ["sessions.manage", "recordings.read"] as const;

/** Throws unless `caller` may watch logins in `workspaceId` (not a member: `not_found`). */
async function checkWatcher(services: Services, caller: Caller, workspaceId: string): Promise<void> {
  let role: Parameters<typeof roleAllows>[0];
  if (caller.kind === "user") {
    const member = await services.storage.members.find(workspaceId, caller.userId);
    if (!member)
      throw new NotFoundError(`workspace ${workspaceId} not found`, { reason: "WORKSPACE_NOT_FOUND" });
    role = member.role;
  } else if (caller.kind === "service_account") {
    if (caller.workspaceId !== workspaceId) {
      throw new NotFoundError(`workspace ${workspaceId} not found`, { reason: "WORKSPACE_NOT_FOUND" });
    }
    role = caller.role;
  } else {
    throw new UnauthenticatedError("watching a login needs a signed-in user or a service account");
  }
  const missing = watchPermissions.filter((permission) => !roleAllows(role, permission));
  if (missing.length > 0) {
    throw new PermissionDeniedError(
      `the ${role} role may not watch logins (needs ${watchPermissions.join(" and ")})`,
      { reason: "ROLE_LACKS_PERMISSION" },
    );
  }
}

const subjectIdOf = (caller: Caller): string =>
  caller.kind === "user" ? caller.userId : caller.kind === "service_account" ? caller.serviceAccountId : "";

/**
 * Opens a watch of the live SSH login `sessionId`: checks the caller, that the login is live and
 * recorded, and audits `ssh_session.watch` naming the watcher. Returns the login.
 */
export async function openSshWatch(
  services: Services,
  caller: Caller,
  workspaceId: string,
  sessionId: string,
  request: RequestFacts,
): Promise<SshSessionRecord> {
  await checkWatcher(services, caller, workspaceId);
  const login = await services.storage.sshSessions.findById(workspaceId, sessionId.toLowerCase());
  if (!login || login.endedAt !== null) {
    throw new NotFoundError(`live SSH login ${sessionId} not found`, { reason: "SESSION_NOT_FOUND" });
  }
  if (!login.recorded) {
    throw new FailedPreconditionError(
      "this login is not recorded (its daemon did not record sessions when it began), so it cannot be watched",
      { reason: "SESSION_NOT_RECORDED" },
    );
  }
  await services.storage.transaction((tx) =>
    appendAudit(tx, services, request, {
      workspaceId,
      actorType: caller.kind,
      actorId: subjectIdOf(caller),
      action: "ssh_session.watch",
      resource: `ssh_session:${login.id}`,
      at: services.clock.now(),
    }),
  );
  return login;
}

/** Checks again that the watcher may still watch (signed in, member, role): throws if not. */
export async function recheckSshWatch(
  services: Services,
  caller: Caller,
  workspaceId: string,
): Promise<void> {
  await checkWatcher(services, await currentCaller(services, caller), workspaceId);
}

/** What a watcher is told when the login ended: how, and by whom when someone ended it. */
export async function sshWatchEndOf(services: Services, login: SshSessionRecord): Promise<string> {
  const reason = login.endReason || "the login ended";
  const [kind, id] = login.endedBy.split(/:(.*)/s, 2);
  if (kind === "user" && id) {
    const user = await services.storage.users.findById(id);
    return `the login ended: ${reason} (closed from the platform by ${user?.name ?? "a deleted account"})`;
  }
  if (kind === "system") return `the login ended: ${reason} (ended by the platform)`;
  return `the login ended: ${reason}`;
}

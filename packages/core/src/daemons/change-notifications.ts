/**
 * Notifications to daemons when what they enforce changes elsewhere: grants
 * (PRINCIPALS: the daemon syncs its principal map) and authorities or a target's CA
 * (SYNC_REQUEST: the only notification that gets a new CA or host certificate into the daemon's
 * sshd).
 *
 * Which daemons a change concerns is read from the audit entry the operation records (action
 * and resource), after the operation has finished, so every transaction it made has committed:
 *
 * | action | daemons told |
 * |---|---|
 * | `principal.set` (target) | the target's |
 * | `principal.grant`, `principal.revoke` (principal) | the principal's target's |
 * | `team.member.add`, `team.member.remove` (team) | those of targets granting the team |
 * | `team.delete`, `access.revoke_all`, `member.remove`, `service_account.delete` | every accepted daemon of the workspace (the grants are gone by now) |
 * | `certificate_authority.update`, `.rollover`, `.delete` (authority) | those of targets trusting it |
 * | `target.update` (target) | the target's |
 * | `certificate.revoke` (authority) | those of targets trusting it, told REVOCATIONS (fetch GetRevocationList again) |
 *
 * Only accepted daemons are told: the others get no principals anyway. Notifications are best
 * effort; a daemon that misses one catches up at its next sync.
 *
 * Operations get no after-commit event API, so {@link withDaemonNotifications} wraps the
 * operations above: it collects their audit entries and notifies once `run` has resolved.
 *
 * @module
 */
import type { AnyOperation, AuditEntry } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { Repositories } from "../storage/storage.js";
import { type NotificationKind, notify, publishCommitted, type TopicEvent } from "./events.js";

/** The operations whose changes concern daemons (by RPC name). */
const watchedMethods = new Set([
  "SetPrincipals",
  "AddSubjectsToPrincipal",
  "RemoveSubjectsFromPrincipal",
  "RevokeAllAccess",
  "AddTeamMember",
  "RemoveTeamMember",
  "DeleteTeam",
  "RemoveWorkspaceMember",
  "DeleteServiceAccount",
  "UpdateCertificateAuthority",
  "DeleteCertificateAuthority",
  "RolloverCertificateAuthority",
  "RotateCertificateAuthority",
  "RevokeCertificate",
  "UpdateTarget",
]);

const workspaceWide = new Set([
  "team.delete",
  "access.revoke_all",
  "member.remove",
  "service_account.delete",
]);
const authorityChanges = new Set([
  "certificate_authority.update",
  "certificate_authority.rollover",
  "certificate_authority.rotate",
  "certificate_authority.delete",
]);

const pageSize = 100;

/** Every item of a paged list. */
async function all<T>(page: (offset: number) => Promise<{ items: T[]; total: number }>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += pageSize) {
    const next = await page(offset);
    items.push(...next.items);
    if (next.items.length === 0 || offset + next.items.length >= next.total) return items;
  }
}

async function daemonsOfTargets(repos: Repositories, workspaceId: string, targetIds: readonly string[]) {
  return targetIds.length === 0 ? [] : repos.targets.daemonsOf(workspaceId, [...new Set(targetIds)]);
}

/** The daemons a change concerns, and what they are told. */
export async function daemonsConcerned(
  repos: Repositories,
  workspaceId: string,
  change: AuditEntry,
): Promise<{ readonly daemons: readonly DaemonRecord[]; readonly eventType: NotificationKind } | null> {
  const [kind, id = ""] = change.resource.split(/:(.*)/s) as [string, string?];
  const action = change.action;
  if (action === "principal.set" && kind === "target") {
    return { daemons: await daemonsOfTargets(repos, workspaceId, [id]), eventType: "PRINCIPALS" };
  }
  if ((action === "principal.grant" || action === "principal.revoke") && kind === "principal") {
    const principal = await repos.principals.findById(workspaceId, id);
    const targets = principal ? [principal.targetId] : [];
    return { daemons: await daemonsOfTargets(repos, workspaceId, targets), eventType: "PRINCIPALS" };
  }
  if ((action === "team.member.add" || action === "team.member.remove") && kind === "team") {
    const granted = await repos.principals.grantedTo(workspaceId, [{ kind: "team", id }]);
    const targets = granted.map((p) => p.targetId);
    return { daemons: await daemonsOfTargets(repos, workspaceId, targets), eventType: "PRINCIPALS" };
  }
  if (workspaceWide.has(action)) {
    const daemons = await all((offset) =>
      repos.daemons.list(workspaceId, { limit: pageSize, offset, status: "accepted" }),
    );
    return { daemons, eventType: "PRINCIPALS" };
  }
  if ((authorityChanges.has(action) || action === "certificate.revoke") && kind === "certificate_authority") {
    const targets = await all((offset) =>
      repos.targets.list(workspaceId, { limit: pageSize, offset, caId: id }),
    );
    const daemons = await daemonsOfTargets(
      repos,
      workspaceId,
      targets.map((t) => t.id),
    );
    return { daemons, eventType: action === "certificate.revoke" ? "REVOCATIONS" : "SYNC_REQUEST" };
  }
  if (action === "target.update" && kind === "target") {
    return { daemons: await daemonsOfTargets(repos, workspaceId, [id]), eventType: "SYNC_REQUEST" };
  }
  return null;
}

/**
 * Tells the accepted daemons concerned by committed changes; each daemon hears each kind of
 * notification once per call, SYNC_REQUEST covering PRINCIPALS.
 */
export async function notifyDaemonsOfChanges(
  services: Services,
  workspaceId: string,
  changes: readonly AuditEntry[],
): Promise<void> {
  const wanted = new Map<string, Set<NotificationKind>>();
  try {
    for (const change of changes) {
      const concerned = await daemonsConcerned(services.storage, change.workspaceId || workspaceId, change);
      for (const daemon of concerned?.daemons ?? []) {
        if (daemon.status !== "accepted") continue;
        const kinds = wanted.get(daemon.id) ?? new Set<NotificationKind>();
        kinds.add(concerned!.eventType);
        wanted.set(daemon.id, kinds);
      }
    }
  } catch {
    // Best effort: the change has committed; the daemons catch up at their next sync.
    return;
  }
  const events: TopicEvent[] = [...wanted].flatMap(([id, kinds]) =>
    [...kinds]
      .filter((kind) => !(kind === "PRINCIPALS" && kinds.has("SYNC_REQUEST")))
      .map((kind) => notify(id, kind)),
  );
  await publishCommitted(services, events);
}

/** Wraps `operation` so that the daemons its committed changes concern are notified. */
function notifying(operation: AnyOperation): AnyOperation {
  return {
    ...operation,
    async run(call) {
      const changes: AuditEntry[] = [];
      const result = await operation.run({
        ...call,
        audit(tx, entry) {
          changes.push(entry);
          return call.audit(tx, entry);
        },
      });
      // `run` has resolved: every transaction it made has committed.
      if (changes.length > 0)
        await notifyDaemonsOfChanges(call.services, call.workspace.workspaceId, changes);
      return result;
    },
  };
}

/** The operations, those whose changes concern daemons wrapped to notify them. */
export function withDaemonNotifications(operations: readonly AnyOperation[]): AnyOperation[] {
  return operations.map((op) => (watchedMethods.has(op.method.name) ? notifying(op) : op));
}

/**
 * Notifications to daemons when what they enforce changes elsewhere: grants
 * (PRINCIPALS: the daemon syncs its principal map) and authorities or a target's CA
 * (SYNC_REQUEST: the only notification that gets a new CA or host certificate into the daemon's
 * sshd).
 *
 * An operation whose changes concern daemons says so in its definition (`notifiesDaemons`, the
 * kinds of {@link DaemonChange} it makes). Which daemons one change concerns is read from the
 * audit entry the operation records (action and resource), after the operation has finished,
 * so every transaction it made has committed:
 *
 * | change | action | daemons told |
 * |---|---|---|
 * | `target` | `principal.set` (target) | the target's |
 * | `target` | `target.update` (target) | the target's, told SYNC_REQUEST |
 * | `principal_target` | `principal.grant`, `principal.revoke` (principal) | the principal's target's |
 * | `team_targets` | `team.member.add`, `team.member.remove` (team) | those of targets granting the team |
 * | `workspace` | `team.delete`, `access.revoke_all`, `member.remove`, `service_account.delete` | every accepted daemon of the workspace (the grants are gone by now) |
 * | `authority_targets` | `certificate_authority.update`, `.rollover`, `.rotate`, `.delete` (authority) | those of targets trusting it, told SYNC_REQUEST |
 * | `revocations` | `certificate.revoke` (authority) | those of targets trusting it, told REVOCATIONS (fetch GetRevocationList again) |
 * | `access_request_target` | `access_request.approve`, `.withdraw`, `.end` (access request) | the request's target's |
 *
 * Only accepted daemons are told: the others get no principals anyway. Notifications are best
 * effort; a daemon that misses one catches up at its next sync.
 *
 * Operations get no after-commit event API, so {@link withDaemonNotifications} wraps the
 * operations that declare `notifiesDaemons`: it collects their audit entries and notifies once
 * `run` has resolved.
 *
 * @module
 */
import type { AuditAction } from "../audit/actions.js";
import type { AnyOperation, AuditEntry } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { Repositories } from "../storage/storage.js";
import { type NotificationKind, notify, publishCommitted, type TopicEvent } from "./events.js";

/** A kind of change that concerns daemons, named by whose daemons it concerns. */
export type DaemonChange =
  /** The daemons of the target named by the entry's resource. */
  | "target"
  /** The daemons of the target of the principal named by the entry's resource. */
  | "principal_target"
  /** The daemons of the targets that grant the team named by the entry's resource. */
  | "team_targets"
  /** Every accepted daemon of the workspace. */
  | "workspace"
  /** The daemons of the targets that trust the authority named by the entry's resource. */
  | "authority_targets"
  /** As `authority_targets`, told that the authority's revocation list changed. */
  | "revocations"
  /** The daemons of the target of the access request named by the entry's resource. */
  | "access_request_target";

interface ActionRule {
  readonly change: DaemonChange;
  /** The kind of resource the entry must name (`target:<id>`), or none for workspace-wide changes. */
  readonly resource?: string;
  readonly tell: NotificationKind;
}

/** The audit actions that concern daemons: the change each is, and what the daemons are told. */
export const daemonNotifyingActions: Readonly<Partial<Record<AuditAction, ActionRule>>> = {
  "principal.set": { change: "target", resource: "target", tell: "PRINCIPALS" },
  "target.update": { change: "target", resource: "target", tell: "SYNC_REQUEST" },
  "principal.grant": { change: "principal_target", resource: "principal", tell: "PRINCIPALS" },
  "principal.revoke": { change: "principal_target", resource: "principal", tell: "PRINCIPALS" },
  "team.member.add": { change: "team_targets", resource: "team", tell: "PRINCIPALS" },
  "team.member.remove": { change: "team_targets", resource: "team", tell: "PRINCIPALS" },
  "team.delete": { change: "workspace", tell: "PRINCIPALS" },
  "access.revoke_all": { change: "workspace", tell: "PRINCIPALS" },
  "member.remove": { change: "workspace", tell: "PRINCIPALS" },
  "service_account.delete": { change: "workspace", tell: "PRINCIPALS" },
  "certificate_authority.update": {
    change: "authority_targets",
    resource: "certificate_authority",
    tell: "SYNC_REQUEST",
  },
  "certificate_authority.rollover": {
    change: "authority_targets",
    resource: "certificate_authority",
    tell: "SYNC_REQUEST",
  },
  "certificate_authority.rotate": {
    change: "authority_targets",
    resource: "certificate_authority",
    tell: "SYNC_REQUEST",
  },
  "certificate_authority.delete": {
    change: "authority_targets",
    resource: "certificate_authority",
    tell: "SYNC_REQUEST",
  },
  "certificate.revoke": { change: "revocations", resource: "certificate_authority", tell: "REVOCATIONS" },
  "access_request.approve": {
    change: "access_request_target",
    resource: "access_request",
    tell: "PRINCIPALS",
  },
  "access_request.withdraw": {
    change: "access_request_target",
    resource: "access_request",
    tell: "PRINCIPALS",
  },
  "access_request.end": { change: "access_request_target", resource: "access_request", tell: "PRINCIPALS" },
};

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
  const rule = daemonNotifyingActions[change.action];
  const [kind, id = ""] = change.resource.split(/:(.*)/s) as [string, string?];
  if (rule === undefined || (rule.resource !== undefined && rule.resource !== kind)) return null;
  return { daemons: await daemonsOf(repos, workspaceId, rule.change, id), eventType: rule.tell };
}

async function daemonsOf(
  repos: Repositories,
  workspaceId: string,
  change: DaemonChange,
  id: string,
): Promise<readonly DaemonRecord[]> {
  switch (change) {
    case "target":
      return daemonsOfTargets(repos, workspaceId, [id]);
    case "principal_target": {
      const principal = await repos.principals.findById(workspaceId, id);
      return daemonsOfTargets(repos, workspaceId, principal ? [principal.targetId] : []);
    }
    case "team_targets": {
      const granted = await repos.principals.grantedTo(workspaceId, [{ kind: "team", id }]);
      return daemonsOfTargets(
        repos,
        workspaceId,
        granted.map((p) => p.targetId),
      );
    }
    case "workspace":
      return all((offset) =>
        repos.daemons.list(workspaceId, { limit: pageSize, offset, status: "accepted" }),
      );
    case "access_request_target": {
      const request = await repos.accessRequests.findById(workspaceId, id);
      return daemonsOfTargets(repos, workspaceId, request ? [request.targetId] : []);
    }
    case "authority_targets":
    case "revocations": {
      const targets = await all((offset) =>
        repos.targets.list(workspaceId, { limit: pageSize, offset, caId: id }),
      );
      return daemonsOfTargets(
        repos,
        workspaceId,
        targets.map((t) => t.id),
      );
    }
  }
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

/** Wraps `operation` so that the daemons its committed changes of the `declared` kinds concern are notified. */
function notifying(operation: AnyOperation, declared: readonly DaemonChange[]): AnyOperation {
  return {
    ...operation,
    async run(call) {
      const changes: AuditEntry[] = [];
      const result = await operation.run({
        ...call,
        audit(tx, entry) {
          const rule = daemonNotifyingActions[entry.action];
          if (rule !== undefined && declared.includes(rule.change)) changes.push(entry);
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

/** The operations, those that declare changes concerning daemons wrapped to notify them. */
export function withDaemonNotifications(operations: readonly AnyOperation[]): AnyOperation[] {
  return operations.map((op) =>
    op.notifiesDaemons === undefined || op.notifiesDaemons.length === 0
      ? op
      : notifying(op, op.notifiesDaemons),
  );
}

/**
 * Which host names and addresses a target may be vouched for by: the names and endpoints an
 * administrator set or approved (a daemon's first report, accepted with the daemon), never one
 * that another target of the workspace also claims. What a daemon reports later waits in
 * `reportedEndpoints` until an administrator approves it (UpdateTarget with those endpoints), so
 * one compromised machine cannot have itself certified as another host.
 *
 * @module
 */
import type { Repositories } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";

/** Every target of the workspace, oldest first. */
export async function allTargets(storage: Repositories, workspaceId: string): Promise<TargetRecord[]> {
  const targets: TargetRecord[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await storage.targets.list(workspaceId, { limit: 100, offset });
    targets.push(...page.items);
    if (page.items.length < 100) return targets;
  }
}

/** The host of an endpoint (`host:port`, `[ipv6]:port`, `host`), without port or brackets, lower case. */
function hostOf(endpoint: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (bracketed) return bracketed[1]!.toLowerCase();
  const colon = endpoint.lastIndexOf(":");
  const host =
    colon > 0 && endpoint.indexOf(":") === colon && /^\d+$/.test(endpoint.slice(colon + 1))
      ? endpoint.slice(0, colon)
      : endpoint;
  return host.toLowerCase();
}

/** The names and endpoint hosts (lower case) that targets of the workspace other than `targetId` claim. */
export async function claimedByOtherTargets(
  storage: Repositories,
  workspaceId: string,
  targetId: string,
): Promise<ReadonlySet<string>> {
  const claimed = new Set<string>();
  for (const target of await allTargets(storage, workspaceId)) {
    if (target.id === targetId) continue;
    claimed.add(target.name.toLowerCase());
    for (const endpoint of target.endpoints) claimed.add(hostOf(endpoint));
  }
  return claimed;
}

/** Whether `endpoint`'s host is one of `claimed`. */
export function claimedEndpoint(endpoint: string, claimed: ReadonlySet<string>): boolean {
  return claimed.has(hostOf(endpoint));
}

/** Whether `a` and `b` hold the same endpoints, in any order. */
export function sameEndpoints(a: readonly string[], b: readonly string[]): boolean {
  const left = [...new Set(a)].sort();
  const right = [...new Set(b)].sort();
  return left.length === right.length && left.every((value, i) => value === right[i]);
}

/**
 * The certificate principals a target's daemon lets in as each login: for every subject in the
 * `username -> ids` map (daemons/sync.ts), the principal of each grant that lets it in
 * (grant-limits.ts: the plain id for a grant without limits, `<id>+<digest>` for one with). A
 * certificate signed under a grant's limits is thus accepted only as a login whose grant has the
 * same limits.
 *
 * @module
 */
import type { Repositories } from "../storage/storage.js";
import { grantPrincipal } from "./grant-limits.js";
import { grantLetsIn } from "./grant-window.js";

/** `logins` (username -> subject ids) with each id replaced by its grants' principals. */
export async function certificatePrincipalsOf(
  repos: Repositories,
  workspaceId: string,
  targetId: string,
  logins: ReadonlyMap<string, readonly string[]>,
  at: Date,
): Promise<Map<string, string[]>> {
  const principals = await repos.principals.listByTargets(workspaceId, [targetId]);
  if (principals.every((p) => p.grants.every((g) => g.limits === undefined))) {
    return new Map([...logins].map(([username, ids]) => [username, [...ids]]));
  }
  const approved = await repos.accessRequests.activeOn(workspaceId, targetId, at);
  const teamIds = [
    ...new Set(
      principals.flatMap((p) => p.grants.filter((g) => g.subject.kind === "team").map((g) => g.subject.id)),
    ),
  ];
  const members = await repos.teams.listMembers(workspaceId, teamIds);
  const result = new Map<string, string[]>();
  for (const [username, ids] of logins) {
    const principal = principals.find((p) => p.username === username);
    const byId = new Map<string, string[]>();
    for (const grant of principal?.grants ?? []) {
      const subjects =
        grant.subject.kind === "team"
          ? members.filter((m) => m.teamId === grant.subject.id).map((m) => m.user.id)
          : [grant.subject.id];
      for (const id of subjects) {
        const during =
          grant.kind === "on_request" && approved.some((r) => r.requesterId === id && r.login === username);
        if (!grantLetsIn(grant, at) && !during) continue;
        const names = byId.get(id) ?? [];
        const name = grantPrincipal(id, grant.limits);
        if (!names.includes(name)) names.push(name);
        byId.set(id, names);
      }
    }
    result.set(
      username,
      ids.flatMap((id) => byId.get(id) ?? [id]),
    );
  }
  return result;
}

/**
 * The rules of access requests: which on-request grant a request is made under, who may decide
 * it, who may see it, and where it stands at a given time (a pending request past its decision
 * time is expired, an approved one past its end has ended, before the sweep records either).
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";
import { FailedPreconditionError, PermissionDeniedError } from "../errors.js";
import { grantLetsIn } from "../principals/grant-terms.js";
import type { AccessRequestRecord, AccessRequestState } from "../storage/access-requests.js";
import type { ApprovalPolicy } from "../storage/principals.js";
import type { Repositories } from "../storage/storage.js";

/** Where a request stands at `at`. */
export function stateAt(request: AccessRequestRecord, at: Date): AccessRequestState {
  if (request.state === "pending" && at.getTime() >= request.decideBy.getTime()) return "expired";
  if (request.state === "approved" && request.endsAt !== null && at.getTime() >= request.endsAt.getTime())
    return "ended";
  return request.state;
}

/**
 * The approval policy of the on-request grant that lets `userId` ask for `login` on the target
 * (a grant to the user first, then one to a team of theirs). Refused when the user may log in
 * already, or holds no such grant.
 */
export async function requestablePolicy(
  repos: Repositories,
  workspaceId: string,
  userId: string,
  targetId: string,
  login: string,
  at: Date,
): Promise<ApprovalPolicy> {
  const principal = (await repos.principals.listByTargets(workspaceId, [targetId])).find(
    (p) => p.username === login,
  );
  const teams = new Set(await repos.teams.teamsOf(workspaceId, userId));
  const applying = (principal?.grants ?? []).filter(
    (g) =>
      (g.subject.kind === "user" && g.subject.id === userId) ||
      (g.subject.kind === "team" && teams.has(g.subject.id)),
  );
  if (applying.some((g) => grantLetsIn(g, at))) {
    throw new FailedPreconditionError(`you may already log in as '${login}' on this target`, {
      reason: "ACCESS_REQUEST_NOT_NEEDED",
    });
  }
  const onRequest = applying.flatMap((g) =>
    g.kind === "on_request" ? [{ user: g.subject.kind === "user", policy: g.approval }] : [],
  );
  const chosen = onRequest.find((g) => g.user) ?? onRequest[0];
  if (!chosen) {
    throw new PermissionDeniedError(`you hold no on-request grant of '${login}' on this target`, {
      reason: "NO_REQUESTABLE_GRANT",
    });
  }
  return chosen.policy;
}

/** Whether a member with `role` may decide requests under `policy` (by role, or through a team). */
export async function mayApprove(
  repos: Repositories,
  workspaceId: string,
  userId: string,
  role: WorkspaceRole | null,
  policy: ApprovalPolicy,
): Promise<boolean> {
  if (role !== null && policy.approverRoles.includes(role)) return true;
  if (policy.approverTeamIds.length === 0) return false;
  const teams = await repos.teams.teamsOf(workspaceId, userId);
  return teams.some((id) => policy.approverTeamIds.includes(id));
}

/** The user ids of the members who may decide requests under `policy`, but not `except`. */
export async function approversOf(
  repos: Repositories,
  workspaceId: string,
  policy: ApprovalPolicy,
  except: string,
): Promise<string[]> {
  const ids = new Set<string>();
  for (const m of await repos.members.listByWorkspace(workspaceId)) {
    if (policy.approverRoles.includes(m.role)) ids.add(m.userId);
  }
  for (const m of await repos.teams.listMembers(workspaceId, policy.approverTeamIds)) ids.add(m.user.id);
  ids.delete(except);
  return [...ids];
}

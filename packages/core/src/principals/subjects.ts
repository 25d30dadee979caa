/**
 * Subjects (users, teams, service accounts): their wire type, how each is found in a workspace,
 * and the message a principal is shown as.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type PrincipalSchema, PrincipalType } from "@wap/api";
import { NotFoundError } from "../errors.js";
import type { PrincipalGrantsRecord, SubjectKind, SubjectRef } from "../storage/principals.js";
import type { Repositories } from "../storage/storage.js";
import { grantLetsIn, toGrantMessage } from "./grant-terms.js";

export const subjectKindFromWire = new Map<number, SubjectKind>([
  [PrincipalType.USER, "user"],
  [PrincipalType.TEAM, "team"],
  [PrincipalType.SERVICE_ACCOUNT, "service_account"],
]);

const nouns: Record<SubjectKind, string> = { user: "user", team: "team", service_account: "service account" };

/** The same answer for a subject of another workspace and for none at all. */
export const subjectNotFound = (kind: SubjectKind, id: string) =>
  new NotFoundError(`${nouns[kind]} ${id} not found`, { reason: "SUBJECT_NOT_FOUND" });

/** True when a subject of this kind and id belongs to the workspace (users: as members). */
export async function subjectExists(
  repos: Repositories,
  workspaceId: string,
  subject: SubjectRef,
): Promise<boolean> {
  switch (subject.kind) {
    case "user":
      return (await repos.members.find(workspaceId, subject.id)) !== null;
    case "team":
      return (await repos.teams.findById(workspaceId, subject.id)) !== null;
    case "service_account":
      return (await repos.serviceAccounts.findById(workspaceId, subject.id)) !== null;
  }
}

/** Which kind of subject an id is in the workspace, or null when it is none of them. */
export async function findSubject(
  repos: Repositories,
  workspaceId: string,
  id: string,
): Promise<SubjectRef | null> {
  for (const kind of ["user", "team", "service_account"] as const) {
    if (await subjectExists(repos, workspaceId, { kind, id })) return { kind, id };
  }
  return null;
}

export function toPrincipalMessage(p: PrincipalGrantsRecord): MessageInitShape<typeof PrincipalSchema> {
  return {
    id: p.id,
    targetId: p.targetId,
    username: p.username,
    userIds: [...p.userIds],
    teamIds: [...p.teamIds],
    serviceAccountIds: [...p.serviceAccountIds],
    createdAt: timestampFromDate(p.createdAt),
    grants: p.grants.map(toGrantMessage),
  };
}

/**
 * Who may log in as each username of a target at `at`: the ids of users (directly or through a
 * team) and service accounts whose grant lets them in then, as the daemon's principal map and
 * certificate principals use them.
 */
export async function loginsOf(
  repos: Repositories,
  workspaceId: string,
  principals: readonly PrincipalGrantsRecord[],
  at: Date,
): Promise<Map<string, string[]>> {
  const effective = principals.map((p) => ({
    username: p.username,
    subjects: p.grants.filter((g) => grantLetsIn(g, at)).map((g) => g.subject),
  }));
  const teamIds = [
    ...new Set(effective.flatMap((p) => p.subjects.filter((s) => s.kind === "team").map((s) => s.id))),
  ];
  const teamMembers = await repos.teams.listMembers(workspaceId, teamIds);
  const logins = new Map<string, string[]>();
  for (const p of effective) {
    const ids = new Set<string>();
    for (const s of p.subjects) if (s.kind !== "team") ids.add(s.id);
    const teams = new Set(p.subjects.filter((s) => s.kind === "team").map((s) => s.id));
    for (const m of teamMembers) if (teams.has(m.teamId)) ids.add(m.user.id);
    logins.set(p.username, [...ids]);
  }
  return logins;
}

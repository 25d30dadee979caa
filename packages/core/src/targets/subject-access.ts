/**
 * What a subject may reach (GetSubjectAccess): the targets with a
 * principal granted to it (for a user also through its teams), each with just those principals
 * and, on each, just the grants that reach the subject;
 * the daemons serving them; and the SSH authorities they trust, so every target's `caId` is among
 * the authorities returned and the CLI can write one `@cert-authority` line per authority.
 *
 * @module
 */
import type { CertificateAuthorityRecord } from "../storage/certificate-authorities.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { PrincipalGrantsRecord, SubjectRef } from "../storage/principals.js";
import type { Repositories } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";

export interface SubjectAccess {
  readonly targets: TargetRecord[];
  /** The principals of those targets that the subject may use. */
  readonly principals: PrincipalGrantsRecord[];
  readonly daemons: DaemonRecord[];
  readonly authorities: CertificateAuthorityRecord[];
}

export async function subjectAccess(
  repos: Repositories,
  workspaceId: string,
  subject: SubjectRef,
): Promise<SubjectAccess> {
  const subjects: SubjectRef[] = [subject];
  if (subject.kind === "user") {
    for (const id of await repos.teams.teamsOf(workspaceId, subject.id)) subjects.push({ kind: "team", id });
  }
  const granted = await repos.principals.grantedTo(workspaceId, subjects);
  const candidates = await repos.targets.listByIds(workspaceId, [...new Set(granted.map((p) => p.targetId))]);

  const authorities: CertificateAuthorityRecord[] = [];
  for (const caId of new Set(candidates.map((t) => t.caId))) {
    const ca = await repos.certificateAuthorities.findById(workspaceId, caId);
    // Only SSH authorities: an X.509 PEM would break the CLI's known_hosts file.
    if (ca?.authorityType === "ssh") authorities.push(ca);
  }
  const trusted = new Set(authorities.map((ca) => ca.id));
  const targets = candidates.filter((t) => trusted.has(t.caId));
  const reachable = new Set(targets.map((t) => t.id));

  const daemons = await repos.targets.daemonsOf(workspaceId, [...reachable]);
  const known = new Set(daemons.map((d) => d.id));
  for (const target of targets) {
    if (target.daemonId === null || known.has(target.daemonId)) continue;
    const daemon = await repos.daemons.findById(workspaceId, target.daemonId);
    if (daemon) {
      daemons.push(daemon);
      known.add(daemon.id);
    }
  }
  return {
    targets,
    // Each principal with only the grants that reach the subject: their kinds say whether the
    // subject may log in as it now or must ask (an on-request grant).
    principals: granted
      .filter((p) => reachable.has(p.targetId))
      .map((p) => ({
        ...p,
        grants: p.grants.filter((g) =>
          subjects.some((s) => s.kind === g.subject.kind && s.id === g.subject.id),
        ),
      })),
    daemons,
    authorities,
  };
}

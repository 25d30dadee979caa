/**
 * What the caller may reach in a workspace (GetSubjectAccess): the targets with the logins
 * granted there, the daemons serving them, and the SSH authorities they trust.
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { CertificateAuthority, Daemon, GetSubjectAccessResponse, Target } from "@wap/api";
// From its own file: `wap ssh` loads only the parts of the contract it uses.
import { GrantKind } from "@wap/api/gen/platform/v1/principal_pb";
import { CliError } from "./exit-codes.js";
import type { SessionWith } from "./session.js";

export interface Reachable {
  readonly target: Target;
  /** The logins granted to the caller on the target, in the server's order. */
  readonly logins: string[];
  /** Those of `logins` the caller holds only on request: each needs an approved access request. */
  readonly onRequest: string[];
  /**
   * Those of `logins` whose every grant to the caller has limits: only a certificate signed for
   * that login (carrying the grant's limits) logs in there.
   */
  readonly limited: string[];
  /**
   * Those of `limited` whose every grant requires a passkey step-up: each connection needs a
   * ceremony (`wap step-up`) and a single-use certificate.
   */
  readonly stepUp: string[];
  readonly daemon: Daemon | undefined;
  readonly authority: CertificateAuthority | undefined;
}

export async function subjectAccess(
  session: SessionWith<"targets">,
  workspaceId: string,
): Promise<GetSubjectAccessResponse> {
  return session.clients.targets.getSubjectAccess({ workspaceId });
}

export function reachableTargets(access: GetSubjectAccessResponse): Reachable[] {
  const now = Date.now();
  // The server sends each principal with the grants that reach the caller.
  const usableNow = (g: Target["principals"][number]["grants"][number]) =>
    g.kind === GrantKind.STANDING ||
    g.kind === GrantKind.UNSPECIFIED ||
    (g.kind === GrantKind.TIME_BOUND &&
      g.validUntil !== undefined &&
      timestampDate(g.validUntil).getTime() > now);
  return access.targets.map((target) => ({
    target,
    logins: target.principals.map((p) => p.username),
    onRequest: target.principals
      .filter((p) => p.grants.length > 0 && !p.grants.some(usableNow))
      .map((p) => p.username),
    limited: target.principals
      .filter((p) => p.grants.length > 0 && p.grants.every((g) => g.limits !== undefined))
      .map((p) => p.username),
    stepUp: target.principals
      .filter((p) => p.grants.length > 0 && p.grants.every((g) => g.limits?.requireStepUp === true))
      .map((p) => p.username),
    daemon: access.daemons.find((d) => d.id === target.daemonId),
    authority: access.certificateAuthorities.find((ca) => ca.id === target.caId),
  }));
}

/** The target named (or numbered) `name`, or an error saying which targets there are. */
export function findTarget(access: GetSubjectAccessResponse, name: string, workspaceName: string): Reachable {
  const all = reachableTargets(access);
  const found = all.find((r) => r.target.name === name) ?? all.find((r) => r.target.id === name);
  if (found === undefined) {
    const names = all.map((r) => r.target.name).join(", ");
    throw new CliError(
      `no target "${name}" you can reach in workspace ${workspaceName} (${names === "" ? "you can reach none" : `yours: ${names}`}): \`wap targets\` lists them`,
    );
  }
  return found;
}

/** The CA named or numbered `wanted` among `authorities`, else the only or the default one. */
export function chooseAuthority(
  authorities: readonly CertificateAuthority[],
  wanted: string | undefined,
  kind: string,
): CertificateAuthority {
  if (wanted !== undefined) {
    const found =
      authorities.find((ca) => ca.id === wanted) ??
      authorities.find((ca) => ca.name.toLowerCase() === wanted.toLowerCase());
    if (found === undefined) {
      throw new CliError(
        `no ${kind} certificate authority "${wanted}" (${authorities.map((ca) => ca.name).join(", ") || "there are none"}): \`wap cas\` lists them`,
      );
    }
    return found;
  }
  if (authorities.length === 1) return authorities[0]!;
  const defaults = authorities.filter((ca) => ca.isDefault);
  if (defaults.length === 1) return defaults[0]!;
  if (authorities.length === 0)
    throw new CliError(`this workspace has no ${kind} certificate authority you can use`);
  throw new CliError(
    `several ${kind} certificate authorities (${authorities.map((ca) => ca.name).join(", ")}): choose one with --ca <name>`,
  );
}

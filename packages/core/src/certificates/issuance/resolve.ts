/**
 * Finding what a signing request is about: the authority that signs, and for host certificates
 * the target. Every lookup is scoped to the caller's workspace, so an id of another workspace is
 * `not_found` like an id that does not exist.
 *
 * Codes: unknown authority or target `not_found`; an authority of the wrong kind, inactive or
 * expired, or not the one the target trusts, `failed_precondition` (the request is right, the
 * authority is not in a state to sign it).
 *
 * @module
 */

import { FailedPreconditionError, NotFoundError } from "../../errors.js";
import { targetNotFound } from "../../principals/not-found.js";
import type { AuthorityKind, CertificateAuthorityRecord } from "../../storage/certificate-authorities.js";
import type { Repositories } from "../../storage/storage.js";
import type { TargetRecord } from "../../storage/targets.js";
import { defaultAuthority } from "../default-authority.js";

const kindName: Record<AuthorityKind, string> = { ssh: "an SSH", x509: "an X.509" };

export const authorityNotFound = (id: string) =>
  new NotFoundError(`certificate authority ${id} not found`, { reason: "CERTIFICATE_AUTHORITY_NOT_FOUND" });

/**
 * The authority that signs: the one named, else the target's, else the workspace default of
 * `kind`; then checked to be of that kind, active, unexpired and (with a target) the target's.
 */
export async function resolveAuthority(
  storage: Repositories,
  params: {
    readonly workspaceId: string;
    readonly kind: AuthorityKind;
    readonly caId: string | undefined;
    readonly target: TargetRecord | undefined;
    readonly now: Date;
  },
): Promise<CertificateAuthorityRecord> {
  const { workspaceId, kind, target } = params;
  const id = params.caId ?? target?.caId;
  let ca: CertificateAuthorityRecord | null;
  if (id !== undefined) {
    ca = await storage.certificateAuthorities.findById(workspaceId, id);
    if (ca === null) throw authorityNotFound(id);
  } else {
    ca = await defaultAuthority(storage, workspaceId, kind, {
      reason: "NO_DEFAULT_CERTIFICATE_AUTHORITY",
      nameOne: "name one (caId)",
    });
  }
  if (ca.authorityType !== kind) {
    throw new FailedPreconditionError(
      `certificate authority ${ca.id} is ${kindName[ca.authorityType]} authority; this call needs ${kindName[kind]} authority`,
      { reason: "WRONG_AUTHORITY_TYPE" },
    );
  }
  if (target !== undefined && target.caId !== ca.id) {
    throw new FailedPreconditionError(
      `target ${target.id} trusts certificate authority ${target.caId}, not ${ca.id}: its certificates come from that one`,
      { reason: "NOT_THE_TARGET_AUTHORITY" },
    );
  }
  if (!ca.isActive) {
    throw new FailedPreconditionError(`certificate authority ${ca.id} is not active`, {
      reason: "CERTIFICATE_AUTHORITY_INACTIVE",
    });
  }
  if (ca.notAfter.getTime() <= params.now.getTime()) {
    throw new FailedPreconditionError(
      `certificate authority ${ca.id} expired at ${ca.notAfter.toISOString()}: roll it over to a new key`,
      { reason: "CERTIFICATE_AUTHORITY_EXPIRED" },
    );
  }
  return ca;
}

/** A target of the workspace, or `not_found`. */
export async function findTarget(
  storage: Repositories,
  workspaceId: string,
  id: string,
): Promise<TargetRecord> {
  const target = await storage.targets.findById(workspaceId, id);
  if (target === null) throw targetNotFound(id);
  return target;
}

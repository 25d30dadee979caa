/**
 * The workspace's default authority of a kind, for calls that name none. When there is none the
 * refusal says which of the two cases holds, so its advice is true: there is no authority of the
 * kind yet (create one: the first of each kind becomes the default), or there are some and none
 * is the default (make one the default, or name one).
 *
 * @module
 */
import { FailedPreconditionError } from "../errors.js";
import type { AuthorityKind, CertificateAuthorityRecord } from "../storage/certificate-authorities.js";
import type { Repositories } from "../storage/storage.js";

const kindName: Record<AuthorityKind, string> = { ssh: "SSH", x509: "X.509" };

export async function defaultAuthority(
  repos: Pick<Repositories, "certificateAuthorities">,
  workspaceId: string,
  kind: AuthorityKind,
  refusal: {
    readonly reason: "NO_DEFAULT_SSH_CA" | "NO_DEFAULT_CERTIFICATE_AUTHORITY";
    /** How this call names an authority instead ("send caId", "enrol with --ca <name or id>"). */
    readonly nameOne: string;
  },
): Promise<CertificateAuthorityRecord> {
  const found = await repos.certificateAuthorities.findDefault(workspaceId, kind);
  if (found) return found;
  const ofKind = (await repos.certificateAuthorities.list(workspaceId)).filter(
    (ca) => ca.authorityType === kind,
  );
  const name = kindName[kind];
  if (ofKind.length === 0) {
    throw new FailedPreconditionError(
      `the workspace has no ${name} certificate authority: create one (console: Certificates, or CreateCertificateAuthority); the first ${name} authority becomes the default`,
      { reason: refusal.reason },
    );
  }
  const names = ofKind.map((ca) => `'${ca.name}'`).join(", ");
  throw new FailedPreconditionError(
    `none of the workspace's ${name} certificate authorities (${names}) is the default: make one the default (console: Certificates, or UpdateCertificateAuthority with isDefault), or ${refusal.nameOne}`,
    { reason: refusal.reason },
  );
}

/** Whether a new authority becomes its kind's default: when asked, or when the kind has none. */
export function becomesDefault(
  existing: readonly Pick<CertificateAuthorityRecord, "authorityType" | "isDefault">[],
  kind: AuthorityKind,
  asked: boolean | undefined,
): boolean {
  return asked === true || !existing.some((ca) => ca.authorityType === kind && ca.isDefault);
}

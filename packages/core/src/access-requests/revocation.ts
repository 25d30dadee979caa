/**
 * The certificates issued under an access request are revoked when it is withdrawn or ends, so
 * their authorities' KRLs name them. Apart from ./certificates.ts, which issuance imports, so
 * that issuance does not depend on revocation.
 *
 * @module
 */
import { revocationAuditEntries } from "../certificates/revocation.js";
import type { AuditEntry } from "../operations/operation.js";
import type { AccessRequestRecord } from "../storage/access-requests.js";
import type { IssuedCertificateRecord } from "../storage/certificates.js";
import type { Repositories } from "../storage/storage.js";

/**
 * Revokes the unexpired certificates issued under `request`, inside the caller's transaction;
 * returns them and the audit entries that tell their authorities' daemons.
 */
export async function revokeIssuedUnder(
  tx: Repositories,
  request: AccessRequestRecord,
  revokedBy: string,
  at: Date,
): Promise<{ revoked: IssuedCertificateRecord[]; entries: AuditEntry[] }> {
  const revoked: IssuedCertificateRecord[] = [];
  for (const event of request.events) {
    if (event.type !== "used" || event.certificateId === undefined) continue;
    const entry = await tx.issuedCertificates.findById(request.workspaceId, event.certificateId);
    if (!entry) continue;
    revoked.push(
      ...(await tx.issuedCertificates.revoke(
        request.workspaceId,
        { by: "serial", caId: entry.caId, serial: entry.serial },
        { revokedAt: at, reason: "privilege_withdrawn", revokedBy },
      )),
    );
  }
  return { revoked, entries: revocationAuditEntries(revoked) };
}

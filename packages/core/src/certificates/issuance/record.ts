/**
 * The last step of issuance: the ledger entry and its audit event, appended together with
 * `storage.append`, which group-commits concurrent issuances. A certificate is returned only once
 * both are durable.
 *
 * @module
 */
import type { AuditAction } from "../../audit/actions.js";
import type { OperationCall } from "../../operations/operation.js";
import type { Services } from "../../operations/services.js";
import type { KeyAlgorithm } from "../../storage/certificate-authorities.js";
import type { IssuedCertificateRecord } from "../../storage/certificates.js";
import { UniqueViolationError } from "../../storage/storage.js";

const auditAction: Record<IssuedCertificateRecord["kind"], AuditAction> = {
  ssh_user: "certificate.sign_ssh_user",
  ssh_host: "certificate.sign_ssh_host",
  x509: "certificate.sign_x509",
};

/**
 * The audit resource of a certificate: its ledger entry, and what a reader of the log needs
 * without looking it up: the serial, the names (principals or X.509 names) and the target.
 */
export function issuanceResource(
  entry: Pick<IssuedCertificateRecord, "id" | "serial" | "principals" | "targetId">,
): string {
  const target = entry.targetId === null ? "" : ` target=${entry.targetId}`;
  return `issued_certificate:${entry.id} serial=${entry.serial} principals=${entry.principals.join(",")}${target}`;
}

/**
 * Writes the ledger entry and the audit event of one certificate; resolves once committed. The
 * observer hears of it then, with the key type of the CA that signed it.
 */
export async function recordIssuance(
  call: Pick<OperationCall<unknown>, "services" | "auditEvent">,
  entry: IssuedCertificateRecord,
  caKeyType: KeyAlgorithm,
): Promise<void> {
  const audit = call.auditEvent({
    action: auditAction[entry.kind],
    resource: issuanceResource(entry),
  });
  await call.services.storage.append({ issuedCertificates: [entry], auditEvents: [audit.record] });
  audit.committed();
  call.services.observer?.certificateIssued?.(entry.kind, caKeyType);
}

/** True for the (about 2^-64 likely) error of a serial another certificate of the authority has. */
export function isSerialCollision(error: unknown): boolean {
  return error instanceof UniqueViolationError && error.constraint === "issued_certificates.serial";
}

/** How often a colliding serial is drawn again before giving up. */
export const SERIAL_ATTEMPTS = 3;

/** A random, non-zero uint64 SSH serial. */
export function randomSshSerial(services: Pick<Services, "random">): bigint {
  for (;;) {
    const bytes = services.random.bytes(8);
    let serial = 0n;
    for (const byte of bytes) serial = (serial << 8n) | BigInt(byte);
    if (serial !== 0n) return serial;
  }
}

/** The key id of a certificate: who asked, and which ledger entry records it. */
export function keyIdOf(
  workspaceId: string,
  requesterType: string,
  requesterId: string,
  entryId: string,
): string {
  return `wap:${workspaceId}:${requesterType}:${requesterId}:${entryId}`;
}

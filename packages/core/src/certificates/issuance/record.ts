/**
 * The last step of issuance: the ledger entry and its audit event, written together through the
 * group-commit batcher. A certificate is returned only once both are durable.
 *
 * @module
 */
import type { OperationCall } from "../../operations/operation.js";
import type { Services } from "../../operations/services.js";
import type { IssuedCertificateRecord } from "../../storage/records.js";
import { UniqueViolationError } from "../../storage/storage.js";
import { perPlatform } from "./platform-scope.js";
import { createWriteBatcher } from "./write-batcher.js";

const batcher = perPlatform(() => createWriteBatcher());

const auditAction: Record<IssuedCertificateRecord["kind"], string> = {
  ssh_user: "certificate.sign_ssh_user",
  ssh_host: "certificate.sign_ssh_host",
  x509: "certificate.sign_x509",
};

/** Writes the ledger entry and the audit event of one certificate; resolves once committed. */
export function recordIssuance(
  call: Pick<OperationCall<unknown>, "services" | "audit">,
  entry: IssuedCertificateRecord,
): Promise<void> {
  return batcher(call.services).write(call.services.storage, async (tx) => {
    await tx.issuedCertificates.insert(entry);
    await call.audit(tx, {
      action: auditAction[entry.kind],
      resource: `issued_certificate:${entry.id}`,
    });
  });
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

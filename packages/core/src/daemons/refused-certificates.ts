/**
 * Single-use certificates a host refused, as its daemon reports them with SyncDaemon: a serial
 * it had seen before (a replay), or a certificate bound to another target. Each is audited
 * (`certificate.use_refused`, actor the daemon) with the ledger entry when the serial is one of
 * the target's authority.
 *
 * @module
 */
import * as z from "zod";
import type { AuditEntry } from "../operations/operation.js";
import type { Repositories } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";
import { text, timestamp } from "../validation/rules.js";

/** At most this many per report; a daemon keeps the rest for its next one. */
export const refusedPerReport = 100;

export const refusedCertificatesInput = z
  .array(
    z.object({
      serial: text({ min: 1, max: 20, pattern: /^\d+$/, patternHint: "must be a decimal serial" }),
      reason: z.enum(["replayed", "other_target"], { message: "must be replayed or other_target" }),
      refusedAt: timestamp.optional(),
    }),
  )
  .max(refusedPerReport, `at most ${refusedPerReport} refused certificates`);

/** Audits each refusal in `tx`. */
export async function auditRefusals(
  tx: Repositories,
  audit: (tx: Repositories, entry: AuditEntry) => Promise<void>,
  target: TargetRecord,
  refusals: z.output<typeof refusedCertificatesInput>,
): Promise<void> {
  for (const refusal of refusals) {
    const entry = await tx.issuedCertificates.findBySerial(target.workspaceId, target.caId, refusal.serial);
    const certificate = entry ? `issued_certificate:${entry.id}` : "issued_certificate:unknown";
    const at = refusal.refusedAt ? ` at=${refusal.refusedAt.toISOString()}` : "";
    await audit(tx, {
      action: "certificate.use_refused",
      resource: `${certificate} serial=${refusal.serial} target=${target.id} reason=${refusal.reason}${at}`,
      workspaceId: target.workspaceId,
    });
  }
}

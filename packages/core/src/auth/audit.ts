import type { AuditAction } from "../audit/actions.js";
import { appendAudit } from "../audit/record.js";
import type { CallContext } from "../context.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";

/**
 * Appends an account audit event (outside any workspace) acted by `userId`. For flows where the
 * caller is not signed in yet (sign-in, reset) the actor is the user the flow resolved to.
 */
export async function auditAccount(
  tx: Repositories,
  services: Services,
  ctx: Pick<CallContext, "ipAddress" | "userAgent" | "requestId">,
  entry: { userId: string; action: AuditAction; resource: string; at: Date },
): Promise<void> {
  // An account row (no workspace): open streams of the account check their access again.
  await appendAudit(tx, services, ctx, {
    workspaceId: null,
    actorId: entry.userId,
    actorType: "user",
    action: entry.action,
    resource: entry.resource,
    at: entry.at,
  });
}

import type { AuditAction } from "../audit/actions.js";
import type { CallContext } from "../context.js";
import { stageAccountChange } from "../events/access-watch.js";
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
  await tx.auditEvents.append({
    id: services.random.uuid(),
    workspaceId: null,
    actorId: entry.userId,
    actorType: "user",
    action: entry.action,
    resource: entry.resource,
    ipAddress: ctx.ipAddress,
    userAgent: ctx.userAgent,
    statusCode: "ok",
    requestId: ctx.requestId,
    timestamp: entry.at,
  });
  // A sign-out, a reset, a deletion: open streams of the account check their access again.
  stageAccountChange(services, tx, entry.userId, entry.resource);
}

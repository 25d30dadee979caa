/**
 * Audit entries for flows that are not RPCs (SSO sign-in callbacks, billing webhooks): RPCs
 * record theirs through `call.audit`, these through here, in the transaction of their change.
 *
 * @module
 */

import type { CallContext } from "../context.js";
import { stageAccountChange } from "../events/access-watch.js";
import type { Services } from "../operations/services.js";
import type { Repositories } from "../storage/storage.js";
import type { AuditAction } from "./actions.js";

/** Where a flow that is not an RPC came from. */
export type RequestFacts = Pick<CallContext, "ipAddress" | "userAgent" | "requestId">;

/** No request behind it (a webhook carries no client of ours). */
export const noRequest: RequestFacts = Object.freeze({ ipAddress: "", userAgent: "", requestId: "" });

export async function appendAudit(
  tx: Repositories,
  services: Services,
  request: RequestFacts,
  entry: {
    readonly workspaceId: string | null;
    /** `user`, or `billing_provider` for provider webhooks. */
    readonly actorType: string;
    readonly actorId: string;
    readonly action: AuditAction;
    readonly resource: string;
    readonly at: Date;
    /** How the request ended; "ok" unless it records a refusal. */
    readonly statusCode?: string;
  },
): Promise<void> {
  await tx.auditEvents.append({
    id: services.random.uuid(),
    workspaceId: entry.workspaceId,
    actorId: entry.actorId,
    actorType: entry.actorType,
    action: entry.action,
    resource: entry.resource,
    ipAddress: request.ipAddress,
    userAgent: request.userAgent,
    statusCode: entry.statusCode ?? "ok",
    requestId: request.requestId,
    timestamp: entry.at,
  });
  if (entry.workspaceId === null) stageAccountChange(services, tx, entry.actorId, entry.resource);
}

/**
 * Audit entries for flows that are not RPCs (SSO sign-in callbacks, billing webhooks): RPCs
 * record theirs through `call.audit`, these through here, in the transaction of their change.
 *
 * @module
 */

import type { CallContext } from "../context.js";
import { stageAccountChange } from "../events/access-watch.js";
import type { Services } from "../operations/services.js";
import type { AuditEventRecord } from "../storage/audit.js";
import type { Repositories } from "../storage/storage.js";
import type { AuditAction } from "./actions.js";

/** Where a flow that is not an RPC came from. */
export type RequestFacts = Pick<CallContext, "ipAddress" | "userAgent" | "requestId">;

/** No request behind it (a webhook carries no client of ours). */
export const noRequest: RequestFacts = Object.freeze({ ipAddress: "", userAgent: "", requestId: "" });

/** What happened, by whom, in which workspace (null: the account, outside any workspace). */
export interface AuditFacts {
  readonly workspaceId: string | null;
  /** `user`, `service_account`, `daemon`, `system`, or `billing_provider` for provider webhooks. */
  readonly actorType: string;
  readonly actorId: string;
  readonly action: AuditAction;
  readonly resource: string;
  readonly at: Date;
  /** How the request ended; "ok" unless it records a refusal. */
  readonly statusCode?: string;
}

/** The one place an audit row is built: the facts, the request they came from, a fresh id. */
export function auditRow(
  services: Pick<Services, "random">,
  request: RequestFacts,
  entry: AuditFacts,
): AuditEventRecord {
  return {
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
  };
}

export async function appendAudit(
  tx: Repositories,
  services: Services,
  request: RequestFacts,
  entry: AuditFacts,
): Promise<void> {
  await tx.auditEvents.append(auditRow(services, request, entry));
  if (entry.workspaceId === null) stageAccountChange(services, tx, entry.actorId, entry.resource);
}

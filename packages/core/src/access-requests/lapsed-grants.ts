/**
 * Time-bound grants stop letting their subject in at their end (the principal map is computed
 * for the time it is read); some time afterwards they are removed, audited as revoked by the
 * system, and the daemons of their targets are told to sync.
 *
 * @module
 */

import { notifyDaemonsOfChanges } from "../daemons/change-notifications.js";
import type { AuditEntry } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import { auditSystemChange, publishSystemEvents, type SystemEvent } from "./system-changes.js";

/** How often each platform instance removes lapsed grants. */
export const lapsedGrantSweepMs = 30_000;

/** Removes the time-bound grants that have ended; returns how many went. */
export async function removeLapsedGrants(services: Services): Promise<number> {
  const at = services.clock.now();
  const { lapsed, events } = await services.storage.transaction(async (tx) => {
    const removed = await tx.principals.removeLapsed(at);
    const staged: SystemEvent[] = [];
    for (const { workspaceId, principalId } of removed) {
      staged.push(
        await auditSystemChange(tx, services, {
          workspaceId,
          action: "principal.revoke",
          resource: `principal:${principalId}`,
          at,
        }),
      );
    }
    return { lapsed: removed, events: staged };
  });
  await publishSystemEvents(services, events);
  const byWorkspace = new Map<string, AuditEntry[]>();
  for (const { workspaceId, principalId } of lapsed) {
    const entries = byWorkspace.get(workspaceId) ?? [];
    entries.push({ action: "principal.revoke", resource: `principal:${principalId}`, workspaceId });
    byWorkspace.set(workspaceId, entries);
  }
  for (const [workspaceId, entries] of byWorkspace)
    await notifyDaemonsOfChanges(services, workspaceId, entries);
  return lapsed.length;
}

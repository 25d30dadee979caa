/**
 * Records what time did to access requests: a pending request past its decision time expired, an
 * approved one past its end ended. Each is kept on the request and audited with the platform as
 * actor; the daemons of an ended request's target are told to sync (the principal maps stopped
 * naming its requester at the end already, as they are computed for the time they are read).
 *
 * @module
 */
import { notifyDaemonsOfChanges } from "../daemons/change-notifications.js";
import type { AuditEntry } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import { revokeIssuedUnder } from "./revocation.js";
import { stateAt } from "./rules.js";
import { auditSystemChange, publishSystemEvents, type SystemEvent } from "./system-changes.js";

/** How often each platform instance sweeps; well within the 5 s in which ended access must be enforced. */
export const accessRequestSweepMs = 2000;

/** Expires and ends what is due; returns how many requests changed. */
export async function sweepAccessRequests(services: Services): Promise<number> {
  const at = services.clock.now();
  const told: Array<{ workspaceId: string; entries: AuditEntry[] }> = [];
  const published: SystemEvent[] = [];
  let changed = 0;
  for (const request of await services.storage.accessRequests.due(at)) {
    const state = stateAt(request, at);
    if (state !== "expired" && state !== "ended") continue;
    const done = await services.storage.transaction(async (tx) => {
      const updated = await tx.accessRequests.update({
        ...request,
        state,
        events: [...request.events, { type: state, actorId: "", reason: "", at }],
        version: request.version + 1,
      });
      // Another instance (or a decision) came first: nothing to record here.
      if (!updated) return null;
      const entries: AuditEntry[] = [
        {
          action: state === "expired" ? "access_request.expire" : "access_request.end",
          resource: `access_request:${request.id}`,
          workspaceId: request.workspaceId,
        },
      ];
      // Certificates issued under it end with it; any still valid (a clock ahead) is revoked.
      if (state === "ended")
        entries.push(...(await revokeIssuedUnder(tx, request, "system:access_request.end", at)).entries);
      const events: SystemEvent[] = [];
      for (const entry of entries) {
        events.push(
          await auditSystemChange(tx, services, {
            workspaceId: request.workspaceId,
            action: entry.action,
            resource: entry.resource,
            at,
          }),
        );
      }
      return { entries, events };
    });
    if (!done) continue;
    changed++;
    told.push({ workspaceId: request.workspaceId, entries: done.entries });
    published.push(...done.events);
  }
  await publishSystemEvents(services, published);
  for (const { workspaceId, entries } of told) await notifyDaemonsOfChanges(services, workspaceId, entries);
  return changed;
}

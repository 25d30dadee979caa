/**
 * Certificates issued under an approved access request: a user certificate asked for a target
 * while the caller's request for it is approved ends no later than the approval does (the answer
 * says so), its key id names the request, and the request records it (a `used` transition with
 * the ledger id, audited). When the request is withdrawn or ends, those certificates are revoked
 * (./revocation.ts).
 *
 * @module
 */

import type { AccessRequestRecord } from "../storage/access-requests.js";
import type { Repositories } from "../storage/storage.js";
import type { ValidityDraft } from "./issuance/options.js";
import type { SignOption } from "./issuance/pipeline.js";

/** The caller's approved request for the target at `at` that ends last, or null. */
export async function approvalFor(
  repos: Repositories,
  workspaceId: string,
  targetId: string,
  userId: string,
  at: Date,
): Promise<AccessRequestRecord | null> {
  const mine = (await repos.accessRequests.activeOn(workspaceId, targetId, at)).filter(
    (r) => r.requesterId === userId,
  );
  mine.sort((a, b) => (b.endsAt?.getTime() ?? 0) - (a.endsAt?.getTime() ?? 0));
  return mine[0] ?? null;
}

/** Ends validity no later than the request's approval does; runs after the lifetime enforcer. */
export function approvalWindow(request: AccessRequestRecord): SignOption<unknown, ValidityDraft> {
  return {
    kind: "enforcer",
    name: "access-request-window",
    enforce(draft) {
      const end = request.endsAt;
      if (end === null || draft.validBefore.getTime() <= end.getTime()) return;
      draft.validBefore = new Date(Math.floor(end.getTime() / 1000) * 1000);
      draft.ttlNote = `cut to the end of access request ${request.id} at ${end.toISOString()}`;
    },
  };
}

/** The key id of a certificate issued under `request`: the usual one, then the request. */
export const keyIdUnder = (keyId: string, request: AccessRequestRecord) => `${keyId}:request:${request.id}`;

/** The request with a `used` transition naming the certificate, one version on. */
export function usedBy(request: AccessRequestRecord, actorId: string, certificateId: string, at: Date) {
  return {
    ...request,
    events: [...request.events, { type: "used" as const, actorId, reason: "", at, certificateId }],
    version: request.version + 1,
  };
}

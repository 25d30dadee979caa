/**
 * Whether a grant lets its subject in at a given time, by its kind alone. Kept apart from the
 * rest of the grant terms (grant-terms.ts) so that issuance can ask without depending on the
 * operations those terms check against.
 *
 * @module
 */
import type { GrantTerms } from "../storage/principals.js";

/** Whether a grant by itself lets its subject in at `at` (on-request grants need an approved request). */
export function grantLetsIn(grant: GrantTerms, at: Date): boolean {
  switch (grant.kind) {
    case "standing":
      return true;
    case "time_bound":
      return at.getTime() < grant.validUntil.getTime();
    case "on_request":
      return false;
  }
}

/**
 * What a platform instance keeps between calls: caches and queues that outlive one call but
 * belong to one platform. `createPlatform` makes it once; every call's copy of `services` carries
 * the same object, and two platforms in one process share none of it.
 *
 * @module
 */
import { createSecurityEventWindows, type SecurityEventWindows } from "../audit/security-events.js";
import { createSignerCaches, type SignerCaches } from "../certificates/issuance/signers.js";
import { createRetiredKeyCache, type RetiredKeyCache } from "../certificates/issuance/trust.js";
import { type AfterCommitWatch, createAfterCommitWatch } from "../events/after-commit.js";
import { createSerialWork, type SerialWork } from "../lib/serial-work.js";
import { createSsoClientCache, type SsoClientCache } from "../sso/options.js";
import type { Storage } from "../storage/storage.js";

export interface PlatformState {
  /** Opened authority keys, per authority and key version. */
  readonly signers: SignerCaches;
  /** Keys retired by rollovers, per authority and key version. */
  readonly retiredKeys: RetiredKeyCache;
  /** The windows that rate-limit security events in the audit log. */
  readonly securityEventWindows: SecurityEventWindows;
  /** Account work run after the answer (reset mails), one piece after another. */
  readonly accountWork: SerialWork;
  /** The transactions of running calls, whose events wait for their commit. */
  readonly afterCommit: AfterCommitWatch;
  /** How single sign-on reaches identity providers, with its failure caches. */
  readonly sso: SsoClientCache;
}

/** The state of a new platform over `storage`. */
export function createPlatformState(storage: Storage): PlatformState {
  return {
    signers: createSignerCaches(),
    retiredKeys: createRetiredKeyCache(),
    securityEventWindows: createSecurityEventWindows(),
    accountWork: createSerialWork(),
    afterCommit: createAfterCommitWatch(storage),
    sso: createSsoClientCache(),
  };
}

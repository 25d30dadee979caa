/**
 * The sign options SSH and X.509 issuance share: allowed key types, backdating, lifetime.
 *
 * @module
 */
import { InvalidArgumentError } from "../../errors.js";
import type { KeyAlgorithm } from "../../storage/certificate-authorities.js";
import type { SignOption } from "./pipeline.js";

/** The validity every draft carries. */
export interface ValidityDraft {
  validAfter: Date;
  validBefore: Date;
  /** Why the lifetime granted is shorter than the one asked for; unset when it is not. */
  ttlNote?: string;
}

/**
 * How far `valid_after` lies before the time of signing, for clients and servers whose clocks run
 * behind (the CLI refuses certificates that are not valid yet).
 */
export const BACKDATE_SECONDS = 5 * 60;

/**
 * Refuses a subject key whose type the authority does not allow: `invalid_argument`, because the
 * same request can never succeed against this authority; the caller must send another key.
 */
export function allowedKeyTypes<Key>(
  allowed: readonly KeyAlgorithm[],
  field: string,
  keyTypeOf: (key: Key) => KeyAlgorithm,
): SignOption<Key, unknown> {
  return {
    kind: "key",
    name: "allowed-key-types",
    check(key) {
      const keyType = keyTypeOf(key);
      if (allowed.includes(keyType)) return;
      const description = `${keyType} keys are not allowed by this certificate authority (allowed: ${allowed.join(", ")})`;
      throw new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
        reason: "KEY_TYPE_NOT_ALLOWED",
        violations: [{ field, description }],
      });
    },
  };
}

/** Certificates carry whole seconds; the ledger and `expiresAt` say exactly what was signed. */
function wholeSeconds(ms: number): Date {
  return new Date(Math.floor(ms / 1000) * 1000);
}

/** Starts validity {@link BACKDATE_SECONDS} before `now`. */
export function backdate(now: Date): SignOption<unknown, ValidityDraft> {
  return {
    kind: "modifier",
    name: "backdate",
    modify(draft) {
      draft.validAfter = wholeSeconds(now.getTime() - BACKDATE_SECONDS * 1000);
    },
  };
}

/**
 * Ends validity after the requested lifetime, or the authority's default when none was asked for.
 * A request above the authority's maximum is cut to the maximum, not refused (clients such as the
 * CLI send a configured TTL as is): the response's `grantedTtl` and `ttlNote` say what was granted
 * and why. No certificate outlives its authority.
 */
export function lifetime(params: {
  readonly now: Date;
  readonly requestedSeconds: number | undefined;
  readonly defaultSeconds: number;
  readonly maxSeconds: number;
  /** e.g. "user certificates", for the note. */
  readonly kindName: string;
  readonly authorityNotAfter: Date;
}): SignOption<unknown, ValidityDraft> {
  return {
    kind: "enforcer",
    name: "lifetime",
    enforce(draft) {
      const requested = params.requestedSeconds ?? params.defaultSeconds;
      const seconds = Math.min(requested, params.maxSeconds);
      const wanted = params.now.getTime() + seconds * 1000;
      const end = Math.min(wanted, params.authorityNotAfter.getTime());
      draft.validBefore = wholeSeconds(end);
      if (end < wanted) {
        draft.ttlNote = `cut to the certificate authority's own expiry at ${params.authorityNotAfter.toISOString()}`;
      } else if (requested > params.maxSeconds) {
        draft.ttlNote = `requested ${requested}s is above this certificate authority's maximum for ${params.kindName} (${params.maxSeconds}s)`;
      }
    },
  };
}

/** What a sign response says of the lifetime: `grantedTtl` from `now`, and `ttlNote`. */
export function grantedLifetime(draft: ValidityDraft, now: Date) {
  const ms = Math.max(0, draft.validBefore.getTime() - now.getTime());
  return {
    grantedTtl: { seconds: BigInt(Math.floor(ms / 1000)), nanos: 0 },
    ttlNote: draft.ttlNote ?? "",
  };
}

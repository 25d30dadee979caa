/**
 * How a domain claim is proven: a DNS TXT record holding the claim's verification token, looked
 * up through an injectable resolver (core reads no network it was not given).
 *
 * @module
 */
import { Resolver } from "node:dns/promises";
import { UnavailableError } from "../errors.js";
import type { Services } from "../operations/services.js";

/**
 * Looks up TXT records: each record is the list of its character strings. `node:dns/promises`
 * `Resolver` has this shape; errors carry node's DNS codes (`ENOTFOUND`, `ENODATA`, ...).
 */
export interface DnsTxtResolver {
  resolveTxt(hostname: string): Promise<string[][]>;
}

/** Where the record is looked for first; the domain itself is tried second. */
export const verificationRecordPrefix = "_wap-challenge.";

let systemResolver: DnsTxtResolver | undefined;

/**
 * The platform's resolver: `services.dns` once PlatformOptions carries one, else the system's
 * (with a short timeout, so a dead server fails the call instead of hanging it).
 */
export function dnsResolverOf(services: Services): DnsTxtResolver {
  const injected = services.dns;
  if (injected) return injected;
  systemResolver ??= new Resolver({ timeout: 3000, tries: 2 });
  return systemResolver;
}

// "No such name" and "no such record" mean the proof is missing; anything else means DNS failed.
const absent = new Set(["ENOTFOUND", "ENODATA", "ENONAME", "NXDOMAIN"]);

/** The TXT values at `name` (each record's strings joined), or [] when there are none. */
async function txtValues(resolver: DnsTxtResolver, name: string): Promise<string[]> {
  try {
    const records = await resolver.resolveTxt(name);
    return records.map((parts) => parts.join(""));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === "string" && absent.has(code)) return [];
    throw new UnavailableError(`could not look up the DNS records of ${name}; retry shortly`, {
      reason: "DNS_UNAVAILABLE",
      cause: error,
    });
  }
}

/** True when `_wap-challenge.<domain>` or `<domain>` has a TXT record equal to `token`. */
export async function hasVerificationRecord(
  resolver: DnsTxtResolver,
  domain: string,
  token: string,
): Promise<boolean> {
  for (const name of [`${verificationRecordPrefix}${domain}`, domain]) {
    const values = await txtValues(resolver, name);
    if (values.some((value) => value.trim() === token)) return true;
  }
  return false;
}

/**
 * The client's address as the server saw it. `X-Forwarded-For` is believed only when the operator
 * says proxies stand in front (`WAP_TRUST_PROXY`): otherwise any client could pick its own rate-limit
 * bucket and audit address.
 *
 * @module
 */
import { isIP } from "node:net";

/**
 * @param socketAddress the TCP peer.
 * @param forwardedFor the `X-Forwarded-For` header(s).
 * @param trustedHops how many proxies in front of the server append to `X-Forwarded-For`; 0 trusts none.
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedHops: number,
): string {
  const peer = normalize(socketAddress ?? "");
  if (trustedHops <= 0 || forwardedFor === undefined) return peer;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((entry) => normalize(entry.trim()))
    .filter((entry) => entry !== "");
  // Each trusted proxy appended the address it saw; the entry before them is the client's.
  const candidate = chain[chain.length - trustedHops];
  return candidate !== undefined && isIP(candidate) !== 0 ? candidate : peer;
}

function normalize(address: string): string {
  // IPv4 clients of a dual-stack socket show up as ::ffff:a.b.c.d.
  return address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

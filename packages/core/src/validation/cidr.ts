/**
 * IPv4 and IPv6 addresses and CIDR blocks, as OpenSSH's `source-address` reads them: parsed,
 * normalised (`10.0.0.0/8`, `2001:db8::/32`; a lone address gets its full prefix), and compared.
 *
 * @module
 */
import { isIP } from "node:net";

/** A parsed block: its family, network bits (host bits zero) and prefix length. */
export interface Cidr {
  readonly family: 4 | 6;
  readonly network: bigint;
  readonly prefix: number;
}

function v4ToBigint(address: string): bigint {
  return address.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBigint(address: string): bigint {
  let text = address;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = v4ToBigint(v4[1]!);
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function bigintToV4(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => ((n >> shift) & 0xffn).toString()).join(".");
}

function bigintToV6(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt((7 - i) * 16)) & 0xffffn));
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLength).join(":")}`;
}

/** The block `text` names (`addr` or `addr/prefix`), or null when it is none. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf("/");
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(address);
  if (family !== 4 && family !== 6) return null;
  const width = family === 4 ? 32 : 128;
  let prefix = width;
  if (slash >= 0) {
    const digits = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(digits)) return null;
    prefix = Number(digits);
    if (prefix > width) return null;
  }
  const value = family === 4 ? v4ToBigint(address) : v6ToBigint(address);
  const hostBits = BigInt(width - prefix);
  return { family, network: (value >> hostBits) << hostBits, prefix };
}

/** The canonical text of a block: network address, then `/prefix`. */
export function formatCidr(cidr: Cidr): string {
  const address = cidr.family === 4 ? bigintToV4(cidr.network) : bigintToV6(cidr.network);
  return `${address}/${cidr.prefix}`;
}

/** True when every address of `inner` lies in `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  const width = outer.family === 4 ? 32 : 128;
  const hostBits = BigInt(width - outer.prefix);
  return inner.network >> hostBits === outer.network >> hostBits;
}

/** The block of exactly one address (an IPv4-mapped IPv6 address is read as IPv4), or null. */
export function addressCidr(address: string): Cidr | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const plain = mapped ? mapped[1]! : address;
  if (isIP(plain) === 0) return null;
  return parseCidr(plain);
}

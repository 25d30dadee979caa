/**
 * The hash chain of a workspace's audit log: what each entry's hash is computed over, written
 * once here for the storage (which links entries as it commits them), the export and the
 * offline verifier.
 *
 * Entry n of a workspace (positions count from 1) has
 *
 * ```
 * hash(n) = SHA-256( hash(n-1) ‖ uint64_be(n) ‖ content(entry n) )      hash(0) = 32 zero bytes
 * ```
 *
 * where `content` is the UTF-8 of `wap-audit-entry-v1\n` followed by the JSON array (RFC 8785
 * form: no spaces, JSON.stringify's escaping) of the entry's fields in {@link chainedFields}
 * order, the timestamp as ISO 8601 UTC with milliseconds and a missing workspace as "".
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { AuditEntry } from "./entry.js";

/** The hash every workspace's chain starts from. */
export const genesisHash: Uint8Array = new Uint8Array(32);

/** The fields an entry's hash covers, in the order they are encoded. */
export const chainedFields = [
  "workspaceId",
  "id",
  "timestamp",
  "actorType",
  "actorId",
  "action",
  "resource",
  "ipAddress",
  "userAgent",
  "statusCode",
  "requestId",
] as const;

const contentPrefix = "wap-audit-entry-v1\n";
const encoder = new TextEncoder();

/** The bytes of an entry its hash covers (besides the previous hash and its position). */
export function auditEntryContent(entry: AuditEntry): Uint8Array {
  const fields: string[] = chainedFields.map((name) => {
    if (name === "timestamp") return entry.timestamp.toISOString();
    if (name === "workspaceId") return entry.workspaceId ?? "";
    return entry[name];
  });
  return encoder.encode(contentPrefix + JSON.stringify(fields));
}

/** `uint64_be(position)`. */
function positionBytes(position: number): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(position));
  return bytes;
}

/** hash(n) from hash(n-1), n and the entry's content. */
export function chainHash(previous: Uint8Array, position: number, content: Uint8Array): Uint8Array {
  const hash = createHash("sha256").update(previous).update(positionBytes(position)).update(content).digest();
  return new Uint8Array(hash.buffer, hash.byteOffset, hash.byteLength);
}

/** Where a stretch of a chain stops following the rule, or null when all of it does. */
export interface ChainBreak {
  /** Index in the entries given. */
  readonly index: number;
  readonly position: number;
  readonly id: string;
  /** `edited`: its hash is not that of its content; `unlinked`: it does not follow the one before. */
  readonly problem: "edited" | "unlinked";
}

/** What {@link findChainBreak} checks of each entry. */
export type ChainLink = AuditEntry & {
  readonly position: number;
  readonly previousHash: Uint8Array;
  readonly hash: Uint8Array;
};

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The first entry of `entries` that breaks the chain started at `start` (the position and hash
 * of the entry before the first): one whose hash is not that of its content (edited), or one
 * whose previous hash is not the hash before it or whose position is not the next (unlinked: an
 * entry missing, entries reordered, or the one before rewritten).
 */
export function findChainBreak(
  start: { readonly position: number; readonly hash: Uint8Array },
  entries: readonly ChainLink[],
): ChainBreak | null {
  let position = start.position;
  let previous = start.hash;
  for (const [index, entry] of entries.entries()) {
    const at = { index, position: entry.position, id: entry.id };
    const expected = chainHash(entry.previousHash, entry.position, auditEntryContent(entry));
    if (!sameBytes(expected, entry.hash)) return { ...at, problem: "edited" };
    if (!sameBytes(entry.previousHash, previous) || entry.position !== position + 1) {
      return { ...at, problem: "unlinked" };
    }
    position = entry.position;
    previous = entry.hash;
  }
  return null;
}

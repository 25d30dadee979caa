/**
 * The chain export: a stretch of a workspace's audit chain as a file that verifies on its own
 * (audit/chain-file.ts). It starts from the hash of the entry before its first, holds every
 * entry from there to its end (a time window's entries commit a little out of time order: those
 * between its first and last are included) and the checkpoints signed over them, and a checkpoint
 * signed for it: over the chain's head when it runs to the head, else over its last entry.
 *
 * @module
 */
import { ResourceExhaustedError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { AuditChainRange, ChainedAuditEventRecord } from "../storage/audit.js";
import { genesisHash } from "./chain.js";
import { type ChainFileCheckpoint, type ChainFileEntry, chainFileWriter } from "./chain-file.js";
import { signCheckpoint } from "./checkpoints.js";
import { defaultAuditExportOptions } from "./export.js";

const hex = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
const base64 = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");

function fileEntry(e: ChainedAuditEventRecord): ChainFileEntry {
  return {
    position: e.position,
    previousHash: hex(e.previousHash),
    hash: hex(e.hash),
    id: e.id,
    workspaceId: e.workspaceId,
    timestamp: e.timestamp.toISOString(),
    actorType: e.actorType,
    actorId: e.actorId,
    action: e.action,
    resource: e.resource,
    ipAddress: e.ipAddress,
    userAgent: e.userAgent,
    statusCode: e.statusCode,
    requestId: e.requestId,
  };
}

function fileCheckpoint(c: { position: number; hash: Uint8Array; signedAt: Date; signature: Uint8Array }) {
  return {
    position: c.position,
    hash: hex(c.hash),
    signedAt: c.signedAt.toISOString(),
    signature: base64(c.signature),
  } satisfies ChainFileCheckpoint;
}

/** Most checkpoints one export carries besides its own (the newest of the stretch are kept). */
const maxCheckpoints = 10_000;

/**
 * The file of the workspace's chain over `[since, until)` (all of it without a window), in
 * `format`. Entries are read and written a page at a time: what it holds is about the file's
 * text, never every entry as an object.
 */
export async function exportAuditChain(
  services: Pick<Services, "storage" | "keyStore" | "clock">,
  workspaceId: string,
  window: { readonly since?: Date; readonly until?: Date },
  format: "json" | "csv",
  limits: { readonly maxRows?: number; readonly pageSize?: number } = {},
): Promise<{ readonly text: string; readonly range: AuditChainRange | null }> {
  const { maxRows, pageSize } = { ...defaultAuditExportOptions, ...limits };
  const { storage } = services;
  const writer = chainFileWriter(format);
  const head = await storage.auditEvents.chainHead(workspaceId);
  let range: AuditChainRange | null = null;
  if (head !== null) {
    if (window.since === undefined && window.until === undefined) range = { first: 1, last: head.position };
    else {
      const found = await storage.auditEvents.chainRange(workspaceId, window);
      // Without an end, the stretch runs to the head (entries stamped before `since` included).
      if (found !== null) range = window.until === undefined ? { ...found, last: head.position } : found;
    }
  }
  if (head === null || range === null) {
    const start = { position: 0, hash: hex(genesisHash) };
    return { text: writer.head(workspaceId, start) + writer.tail(workspaceId, []), range: null };
  }
  if (range.last - range.first + 1 > maxRows) {
    throw new ResourceExhaustedError(
      `the export would hold ${range.last - range.first + 1} events; one export holds at most ${maxRows}: narrow the date range`,
      { reason: "AUDIT_EXPORT_TOO_LARGE" },
    );
  }
  const parts: string[] = [];
  let count = 0;
  let firstPrevious: Uint8Array | undefined;
  let lastHash: Uint8Array | undefined;
  for (let from = range.first; from <= range.last; ) {
    const page = await storage.auditEvents.scanChain(workspaceId, { from, to: range.last, limit: pageSize });
    let text = "";
    for (const entry of page) {
      firstPrevious ??= entry.previousHash;
      if (entry.position === range.last) lastHash = entry.hash;
      text += writer.entry(fileEntry(entry), count++ === 0);
    }
    parts.push(text);
    if (page.length < pageSize) break;
    from = page[page.length - 1]!.position + 1;
  }
  // The hash it starts from; an entry missing before the stretch leaves only what its first claims.
  const startHash =
    (await storage.auditEvents.chainHashAt(workspaceId, range.first - 1)) ?? firstPrevious ?? genesisHash;
  const stored = await storage.auditCheckpoints.list(
    workspaceId,
    { first: range.first - 1, last: range.last },
    maxCheckpoints,
  );
  const endHash = range.last === head.position ? head.hash : lastHash;
  const own =
    endHash === undefined
      ? []
      : [await signCheckpoint(services, workspaceId, { position: range.last, hash: endHash })];
  const start = { position: range.first - 1, hash: hex(startHash) };
  return {
    text:
      writer.head(workspaceId, start) +
      parts.join("") +
      writer.tail(workspaceId, [...stored, ...own].map(fileCheckpoint)),
    range,
  };
}

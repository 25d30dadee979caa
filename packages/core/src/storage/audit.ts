/**
 * The audit log (`audit_events`): appended event by event, listed in pages, scanned in bulk for
 * the export.
 *
 * @module
 */
import type { AuditEntry } from "@wap/audit-chain";
import type { Page, PageRequest } from "./common.js";

/** A row of the audit log: the fields the workspace's hash chain covers (@wap/audit-chain). */
export type AuditEventRecord = AuditEntry;

export interface AuditEventFilter extends PageRequest {
  readonly since?: Date;
  readonly until?: Date;
  readonly action?: string;
  readonly actorId?: string;
  /** ASCII-case-insensitive substring of the action, resource, actor, address or user agent. */
  readonly search?: string;
  /** Events of any of these actors / actor types / actions (an empty list filters nothing). */
  readonly actorIds?: readonly string[];
  readonly actorTypes?: readonly string[];
  readonly actions?: readonly string[];
  /** Events about any of these resources (exactly as `resource` reads). */
  readonly resources?: readonly string[];
}

/** A window of a workspace's audit log, read oldest first in pages (the export). */
export interface AuditScanRequest {
  /** Inclusive. */
  readonly since?: Date;
  /** Exclusive. */
  readonly until?: Date;
  /** Where the previous page ended (its `next`); absent for the first page. */
  readonly after?: string;
  readonly limit: number;
}

export interface AuditScanPage {
  /** Oldest first; events of the same millisecond in the order they were appended. */
  readonly items: AuditEventRecord[];
  /** Opaque cursor for the next page, or null when this page ended the window. */
  readonly next: string | null;
}

/** An entry of a workspace's hash chain (audit/chain.ts says what the hashes cover). */
export interface ChainedAuditEventRecord extends AuditEventRecord {
  readonly workspaceId: string;
  /** 1 for the workspace's first entry, then one more for each. */
  readonly position: number;
  /** The hash of the entry at `position - 1` (32 zero bytes for the first). */
  readonly previousHash: Uint8Array;
  readonly hash: Uint8Array;
}

/** The last entry of a workspace's chain. */
export interface AuditChainHead {
  readonly position: number;
  readonly hash: Uint8Array;
}

/** A stretch of a workspace's chain, by position, both ends inclusive. */
export interface AuditChainRange {
  readonly first: number;
  readonly last: number;
}

/** A chain head signed with the workspace's audit key (audit/checkpoints.ts). */
export interface AuditCheckpointRecord {
  readonly workspaceId: string;
  readonly position: number;
  readonly hash: Uint8Array;
  readonly signedAt: Date;
  /** Ed25519 over the checkpoint's message. */
  readonly signature: Uint8Array;
}

export interface AuditEventRepository {
  /**
   * Appends the event. An event of a workspace joins the workspace's hash chain when the
   * transaction that appends it commits: the storage gives it the next position and its hashes,
   * one writer at a time per workspace (across instances too), so the chain never forks and
   * skips no committed entry.
   */
  append(event: AuditEventRecord): Promise<void>;
  /** Newest first. */
  list(workspaceId: string, filter: AuditEventFilter): Promise<Page<AuditEventRecord>>;
  // The log read in bulk: counts and keyset pages, so an export never holds all rows.
  /** How many events of the workspace fall in `[since, until)`. */
  count(workspaceId: string, window: Pick<AuditScanRequest, "since" | "until">): Promise<number>;
  scan(workspaceId: string, request: AuditScanRequest): Promise<AuditScanPage>;
  // The hash chain.
  /** The workspace's last chained entry, or null before its first. */
  chainHead(workspaceId: string): Promise<AuditChainHead | null>;
  /**
   * The positions from the first entry stamped at or after `since` to the last stamped before
   * `until` (entries commit a little out of time order: those between are included), or null
   * when no entry falls in the window.
   */
  chainRange(
    workspaceId: string,
    window: Pick<AuditScanRequest, "since" | "until">,
  ): Promise<AuditChainRange | null>;
  /** Up to `limit` entries from position `from` on (at most `to`), in chain order. */
  scanChain(
    workspaceId: string,
    request: { readonly from: number; readonly to: number; readonly limit: number },
  ): Promise<ChainedAuditEventRecord[]>;
  /** The hash of the entry at `position` (the genesis hash for 0), or null when there is none. */
  chainHashAt(workspaceId: string, position: number): Promise<Uint8Array | null>;
}

/** A workspace's audit signing key: Ed25519, its private half sealed with the master key. */
export interface AuditSigningKeyRecord {
  readonly workspaceId: string;
  /** The raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
  /** PKCS #8 DER of the private key, sealed under `audit-key:<workspaceId>`. */
  readonly sealedPrivateKey: Uint8Array;
  readonly createdAt: Date;
}

export interface AuditCheckpointRepository {
  findKey(workspaceId: string): Promise<AuditSigningKeyRecord | null>;
  /** Stores the key unless the workspace has one, and returns the stored one (instances race). */
  insertKeyIfAbsent(key: AuditSigningKeyRecord): Promise<AuditSigningKeyRecord>;
  add(checkpoint: AuditCheckpointRecord): Promise<void>;
  /** The newest checkpoint of the workspace, or null. */
  latest(workspaceId: string): Promise<AuditCheckpointRecord | null>;
  /** Heads of chains that moved past their newest checkpoint (or have none), at most `limit`. */
  unsignedHeads(limit: number): Promise<Array<AuditChainHead & { readonly workspaceId: string }>>;
  /** Checkpoints at positions in `range`, oldest first (at most `limit`). */
  list(workspaceId: string, range: AuditChainRange, limit: number): Promise<AuditCheckpointRecord[]>;
}

/**
 * The audit log (`audit_events`): appended event by event, listed in pages, scanned in bulk for
 * the export.
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";

export interface AuditEventRecord {
  readonly id: string;
  /** Null for events outside any workspace (sign-in, registration). */
  readonly workspaceId: string | null;
  readonly actorId: string;
  readonly actorType: string;
  /** `<service>.<method>`-style verb, e.g. `certificate_authority.create`. */
  readonly action: string;
  /** What the action touched, e.g. `certificate_authority:<id>`. */
  readonly resource: string;
  readonly ipAddress: string;
  readonly userAgent: string;
  readonly statusCode: string;
  readonly requestId: string;
  readonly timestamp: Date;
}

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

export interface AuditEventRepository {
  append(event: AuditEventRecord): Promise<void>;
  /** Newest first. */
  list(workspaceId: string, filter: AuditEventFilter): Promise<Page<AuditEventRecord>>;
  // The log read in bulk: counts and keyset pages, so an export never holds all rows.
  /** How many events of the workspace fall in `[since, until)`. */
  count(workspaceId: string, window: Pick<AuditScanRequest, "since" | "until">): Promise<number>;
  scan(workspaceId: string, request: AuditScanRequest): Promise<AuditScanPage>;
}

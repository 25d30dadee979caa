/**
 * An audit entry as the chain covers it: the fields of the audit log's rows.
 *
 * @module
 */
export interface AuditEntry {
  readonly id: string;
  /** Null for events outside any workspace (sign-in, registration): those are not chained. */
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

/** What a checkpoint says: the chain's head (position and hash) of a workspace, when, signed. */
export interface Checkpoint {
  readonly workspaceId: string;
  readonly position: number;
  readonly hash: Uint8Array;
  readonly signedAt: Date;
  readonly signature: Uint8Array;
}

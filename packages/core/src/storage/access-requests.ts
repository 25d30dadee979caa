/**
 * Access requests: a member's request for just-in-time access to a target's login, with the
 * approval policy of the grant it was made under and every transition it went through
 * (`access_requests`).
 *
 * @module
 */
import type { ApprovalPolicy } from "./principals.js";

export type AccessRequestState = "pending" | "approved" | "denied" | "expired" | "withdrawn" | "ended";

export type AccessRequestEventType =
  | "requested"
  | "approval"
  | "approved"
  | "denied"
  | "expired"
  | "withdrawn"
  | "used"
  | "ended";

/** One transition; `actorId` is empty for the platform (expiry, end of the window). */
export interface AccessRequestEventRecord {
  readonly type: AccessRequestEventType;
  readonly actorId: string;
  readonly reason: string;
  readonly at: Date;
  /** `used`: the ledger id of the certificate issued under the request. */
  readonly certificateId?: string;
}

export interface AccessRequestRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string;
  /** The Unix login name asked for. */
  readonly login: string;
  readonly requesterId: string;
  readonly reason: string;
  readonly durationSeconds: number;
  readonly state: AccessRequestState;
  /** The policy of the grant the request was made under, as it was then. */
  readonly policy: ApprovalPolicy;
  readonly createdAt: Date;
  /** A pending request expires then. */
  readonly decideBy: Date;
  readonly approvedAt: Date | null;
  /** Approved requests: when their access ends. */
  readonly endsAt: Date | null;
  readonly events: readonly AccessRequestEventRecord[];
  /** Raised by every update; an update names the version it read. */
  readonly version: number;
}

export interface AccessRequestRepository {
  insert(request: AccessRequestRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<AccessRequestRecord | null>;
  /**
   * Writes `request` (its version one above the stored one) when the stored row still has
   * `request.version - 1`; false when another update came first.
   */
  update(request: AccessRequestRecord): Promise<boolean>;
  /** The workspace's requests, newest first. */
  listByWorkspace(workspaceId: string): Promise<AccessRequestRecord[]>;
  /** Approved requests of a target whose window holds `at`. */
  activeOn(workspaceId: string, targetId: string, at: Date): Promise<AccessRequestRecord[]>;
  /** Every workspace's pending requests past their decision time and approved ones past their end, at `at`. */
  due(at: Date): Promise<AccessRequestRecord[]>;
}

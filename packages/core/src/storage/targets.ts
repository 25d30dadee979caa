/**
 * Targets: the machines reachable through the platform (`targets`).
 *
 * @module
 */
import type { Page, PageRequest, Patch } from "./common.js";
import type { DaemonRecord } from "./daemons.js";

/** A target: a machine reachable through the platform, trusting one SSH authority. */
export interface TargetRecord {
  readonly id: string;
  readonly workspaceId: string;
  /** The authority that signs the target's host certificate and that its sshd trusts for users. */
  readonly caId: string;
  /** The daemon serving the target, if one is enrolled for it. */
  readonly daemonId: string | null;
  /** Unique in the workspace. */
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  /**
   * `host:port` or `host` strings: as an administrator set them, or as the target's daemon first
   * reported them (approved with the daemon). Host certificates name these hosts.
   */
  readonly endpoints: readonly string[];
  /**
   * What the target's daemon reports now when it differs from `endpoints`: waits for an
   * administrator to approve it (UpdateTarget with these endpoints). Absent or empty: nothing waits.
   */
  readonly reportedEndpoints?: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface TargetFilter extends PageRequest {
  readonly caId?: string;
  readonly daemonId?: string;
  /** Case-insensitive substring of the name or description. */
  readonly query?: string;
  /** Targets carrying every one of these tags. */
  readonly tags?: readonly string[];
  /** Targets with a principal of at least one of these usernames. */
  readonly principals?: readonly string[];
}

export interface TargetRepository {
  /** Throws {@link UniqueViolationError} (`targets.name`) for a name taken in the workspace. */
  insert(target: TargetRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<TargetRecord | null>;
  /** Oldest first, with the total. */
  list(workspaceId: string, filter: TargetFilter): Promise<Page<TargetRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      TargetRecord,
      "caId" | "daemonId" | "name" | "description" | "tags" | "endpoints" | "reportedEndpoints" | "metadata"
    >,
    updatedAt: Date,
  ): Promise<TargetRecord | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** How many targets of the workspace name this authority: an authority in use is not deleted. */
  countByCa(workspaceId: string, caId: string): Promise<number>;
  /** These targets (unknown ids are skipped), oldest first. */
  listByIds(workspaceId: string, ids: readonly string[]): Promise<TargetRecord[]>;
  /** Every distinct tag of the workspace's targets, sorted. */
  tags(workspaceId: string): Promise<string[]>;
  /** The daemons serving these targets, oldest first. */
  daemonsOf(workspaceId: string, targetIds: readonly string[]): Promise<DaemonRecord[]>;
}

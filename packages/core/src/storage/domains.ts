/**
 * Domains a workspace claims (`workspace_domains`).
 *
 * @module
 */

/** A domain a workspace claims; it is verified once a DNS record proves control. */
export interface WorkspaceDomainRecord {
  readonly workspaceId: string;
  /** Lower case, no trailing dot. Unique in the workspace; verified by at most one workspace. */
  readonly domain: string;
  readonly verificationToken: string;
  readonly verifiedAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface WorkspaceDomainRepository {
  /** Throws UniqueViolationError (`workspace_domains.domain`) for a domain the workspace claims. */
  insert(domain: WorkspaceDomainRecord): Promise<void>;
  find(workspaceId: string, domain: string): Promise<WorkspaceDomainRecord | null>;
  /** Alphabetical. */
  list(workspaceId: string): Promise<WorkspaceDomainRecord[]>;
  /**
   * Throws UniqueViolationError (`workspace_domains.verified_domain`) when `verifiedAt` is set
   * and another workspace has verified the same domain.
   */
  update(
    workspaceId: string,
    domain: string,
    patch: Partial<Pick<WorkspaceDomainRecord, "verificationToken" | "verifiedAt">>,
    updatedAt: Date,
  ): Promise<WorkspaceDomainRecord | null>;
  delete(workspaceId: string, domain: string): Promise<boolean>;
}

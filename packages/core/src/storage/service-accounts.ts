/**
 * Service accounts (`service_accounts`).
 *
 * @module
 */
import type { WorkspaceRole } from "../context.js";
import type { Page, PageRequest, Patch } from "./common.js";

export type ServiceAccountRole = Extract<WorkspaceRole, "viewer" | "editor">;

export interface ServiceAccountRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly name: string;
  readonly description: string;
  readonly role: ServiceAccountRole;
  readonly tags: readonly string[];
  /** SHA-256, hex, of the whole PASETO token (of the hex secret part for a legacy `wapsa_` token). */
  readonly tokenHash: string;
  readonly expiresAt: Date | null;
  readonly lastUsedAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface ServiceAccountFilter extends PageRequest {
  /** Case-insensitive substring of the name or description. */
  readonly query?: string;
  readonly role?: string;
  /** Accounts carrying every one of these tags. */
  readonly tags?: readonly string[];
}

export interface ServiceAccountRepository {
  insert(account: ServiceAccountRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<ServiceAccountRecord | null>;
  /** For bearer-token authentication, before the workspace is known. */
  findByIdForAuthentication(id: string): Promise<ServiceAccountRecord | null>;
  list(workspaceId: string, filter: ServiceAccountFilter): Promise<Page<ServiceAccountRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<ServiceAccountRecord, "name" | "description" | "role" | "tags">,
    updatedAt: Date,
  ): Promise<ServiceAccountRecord | null>;
  touchLastUsed(id: string, at: Date): Promise<void>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

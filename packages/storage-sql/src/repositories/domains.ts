/**
 * Domain claims (`workspace_domains`).
 *
 * @module
 */
import type { WorkspaceDomainRecord, WorkspaceDomainRepository } from "@wap/core/storage";
import type { Insertable, Selectable, Updateable } from "kysely";
import { fromDate, fromDateOrNull, toDate, toDateOrNull } from "../lib/mapping.js";
import { compare } from "../lib/queries.js";
import { deleteInWorkspace, findInWorkspace, updateInWorkspace } from "../lib/scoped.js";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";
import type { WorkspaceDomainsTable } from "../schema-workspace-access.js";

function rowToDomain(r: Selectable<WorkspaceDomainsTable>): WorkspaceDomainRecord {
  return {
    workspaceId: r.workspace_id,
    domain: r.domain,
    verificationToken: r.verification_token,
    verifiedAt: toDateOrNull(r.verified_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function domainToRow(d: WorkspaceDomainRecord): Insertable<WorkspaceDomainsTable> {
  return {
    workspace_id: d.workspaceId,
    domain: d.domain,
    verification_token: d.verificationToken,
    verified_at: fromDateOrNull(d.verifiedAt),
    created_at: fromDate(d.createdAt),
    updated_at: fromDate(d.updatedAt),
  };
}

export function createWorkspaceDomainRepository(run: QueryRunner): WorkspaceDomainRepository {
  return {
    async insert(domain) {
      await run.write((db) => db.insertInto("workspace_domains").values(domainToRow(domain)).execute());
    },
    async find(workspaceId, domain) {
      const row = await run.read((db) =>
        findInWorkspace(db, "workspace_domains", workspaceId, domain, "domain"),
      );
      return row ? rowToDomain(row) : null;
    },
    async list(workspaceId) {
      const rows = await run.read((db) =>
        db.selectFrom("workspace_domains").selectAll().where("workspace_id", "=", workspaceId).execute(),
      );
      return rows.map(rowToDomain).sort((a, b) => compare(a.domain, b.domain));
    },
    async update(workspaceId, domain, patch, updatedAt) {
      const set: Updateable<Database["workspace_domains"]> = { updated_at: fromDate(updatedAt) };
      if (patch.verificationToken !== undefined) set.verification_token = patch.verificationToken;
      if (patch.verifiedAt !== undefined) set.verified_at = fromDateOrNull(patch.verifiedAt);
      const row = await run.write((db) =>
        updateInWorkspace(db, "workspace_domains", workspaceId, domain, set, "domain"),
      );
      return row ? rowToDomain(row) : null;
    },
    async delete(workspaceId, domain) {
      return run.write((db) => deleteInWorkspace(db, "workspace_domains", workspaceId, domain, "domain"));
    },
  };
}

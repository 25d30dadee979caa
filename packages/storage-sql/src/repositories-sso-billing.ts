/**
 * The queries of the SSO and billing repositories, written once for both dialects. Upserts are
 * one `insert ... on conflict do update`, and consuming a sign-in state is one conditional
 * delete, so the database picks the single winner of any race.
 *
 * @module
 */
import type { SsoBillingRepositories } from "@wap/core/storage";
import { sql } from "kysely";
import type { SqlDialectName } from "./dialect.js";
import { fromDate, toNumber } from "./lib/mapping.js";
import { rowToLinkedAccount } from "./lib/mapping-accounts.js";
import {
  billingAccountToRow,
  idpMetadataToJson,
  loginStateToRow,
  oidcProviderToRow,
  rowToBillingAccount,
  rowToLoginState,
  rowToOidcProvider,
  rowToSamlProvider,
  samlProviderToRow,
} from "./lib/mapping-sso-billing.js";
import type { QueryRunner } from "./repositories.js";
import { createAuditLogRepository } from "./repositories-audit.js";
import type { Database } from "./schema.js";

/** Every column of an upsert except the key and what an update never changes. */
function excludedColumns<T extends string>(columns: readonly T[]) {
  return Object.fromEntries(columns.map((c) => [c, sql.ref(`excluded.${c}`)])) as Record<T, never>;
}

const oidcUpdated = [
  "name",
  "issuer_url",
  "client_id",
  "sealed_client_secret",
  "scopes",
  "email_claim",
  "name_claim",
  "username_claim",
  "picture_claim",
  "enforce_sso",
  "allow_jit_provisioning",
  "use_pkce",
  "is_active",
  "updated_at",
] as const;

const samlUpdated = [
  "name",
  "metadata_url",
  "email_attribute",
  "name_attribute",
  "username_attribute",
  "picture_attribute",
  "enforce_sso",
  "allow_jit_provisioning",
  "is_active",
  "idp_metadata",
  "updated_at",
] as const;

const billingUpdated = [
  "provider",
  "customer_id",
  "subscription_id",
  "product_id",
  "product_name",
  "status",
  "cancel_at_period_end",
  "current_period_end",
  "metadata",
  "state_at",
  "updated_at",
] as const;

/** `select count(*) from <table> where workspace_id = ?` as a scalar subquery. */
function countIn(table: keyof Database & string, workspaceId: string) {
  return sql<
    number | string | bigint
  >`(select count(*) from ${sql.table(table)} where workspace_id = ${workspaceId})`;
}

export function createSsoBillingRepositories(
  run: QueryRunner,
  dialect: SqlDialectName,
): SsoBillingRepositories {
  return {
    oidcProviders: {
      async upsert(provider) {
        await run.write((db) =>
          db
            .insertInto("oidc_providers")
            .values(oidcProviderToRow(provider))
            .onConflict((oc) => oc.column("workspace_id").doUpdateSet(excludedColumns(oidcUpdated)))
            .execute(),
        );
      },
      async find(workspaceId) {
        const row = await run.read((db) =>
          db
            .selectFrom("oidc_providers")
            .selectAll()
            .where("workspace_id", "=", workspaceId)
            .executeTakeFirst(),
        );
        return row ? rowToOidcProvider(row) : null;
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("oidc_providers").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToOidcProvider(row) : null;
      },
    },

    samlProviders: {
      async upsert(provider) {
        await run.write((db) =>
          db
            .insertInto("saml_providers")
            .values(samlProviderToRow(provider))
            .onConflict((oc) => oc.column("workspace_id").doUpdateSet(excludedColumns(samlUpdated)))
            .execute(),
        );
      },
      async find(workspaceId) {
        const row = await run.read((db) =>
          db
            .selectFrom("saml_providers")
            .selectAll()
            .where("workspace_id", "=", workspaceId)
            .executeTakeFirst(),
        );
        return row ? rowToSamlProvider(row) : null;
      },
      async findById(id) {
        const row = await run.read((db) =>
          db.selectFrom("saml_providers").selectAll().where("id", "=", id).executeTakeFirst(),
        );
        return row ? rowToSamlProvider(row) : null;
      },
      async setIdpMetadata(workspaceId, metadataUrl, metadata) {
        const result = await run.write((db) =>
          db
            .updateTable("saml_providers")
            .set({ idp_metadata: idpMetadataToJson(metadata) })
            .where("workspace_id", "=", workspaceId)
            .where("metadata_url", "=", metadataUrl)
            .executeTakeFirst(),
        );
        return result.numUpdatedRows > 0n;
      },
    },

    ssoLoginStates: {
      async insert(state) {
        await run.write((db) => db.insertInto("sso_login_states").values(loginStateToRow(state)).execute());
      },
      async find(id, at) {
        const row = await run.read((db) =>
          db
            .selectFrom("sso_login_states")
            .selectAll()
            .where("id", "=", id)
            .where("expires_at", ">", fromDate(at))
            .executeTakeFirst(),
        );
        return row ? rowToLoginState(row) : null;
      },
      async consume(id, protocol, at) {
        const row = await run.write((db) =>
          db
            .deleteFrom("sso_login_states")
            .where("id", "=", id)
            .where("protocol", "=", protocol)
            .where("expires_at", ">", fromDate(at))
            .returningAll()
            .executeTakeFirst(),
        );
        return row ? rowToLoginState(row) : null;
      },
      async deleteExpired(before) {
        await run.write((db) =>
          db.deleteFrom("sso_login_states").where("expires_at", "<", fromDate(before)).execute(),
        );
      },
    },

    billingAccounts: {
      async find(workspaceId) {
        const row = await run.read((db) =>
          db
            .selectFrom("billing_accounts")
            .selectAll()
            .where("workspace_id", "=", workspaceId)
            .executeTakeFirst(),
        );
        return row ? rowToBillingAccount(row) : null;
      },
      async findByCustomer(provider, customerId) {
        const row = await run.read((db) =>
          db
            .selectFrom("billing_accounts")
            .selectAll()
            .where("provider", "=", provider)
            .where("customer_id", "=", customerId)
            .executeTakeFirst(),
        );
        return row ? rowToBillingAccount(row) : null;
      },
      async upsert(account) {
        await run.write((db) =>
          db
            .insertInto("billing_accounts")
            .values(billingAccountToRow(account))
            .onConflict((oc) => oc.column("workspace_id").doUpdateSet(excludedColumns(billingUpdated)))
            .execute(),
        );
      },
    },

    ssoDirectory: {
      async findLinkedAccount(provider, providerId) {
        const row = await run.read((db) =>
          db
            .selectFrom("linked_accounts")
            .selectAll()
            .where("provider", "=", provider)
            .where("provider_id", "=", providerId)
            .executeTakeFirst(),
        );
        return row ? rowToLinkedAccount(row) : null;
      },
      async workspaceForVerifiedDomain(domain) {
        const row = await run.read((db) =>
          db
            .selectFrom("workspace_domains")
            .select("workspace_id")
            .where("domain", "=", domain)
            .where("verified_at", "is not", null)
            .executeTakeFirst(),
        );
        return row?.workspace_id ?? null;
      },
    },

    workspaceUsage: {
      async counts(workspaceId) {
        const row = await run.read((db) =>
          db
            .selectNoFrom([
              countIn("workspace_members", workspaceId).as("members"),
              countIn("teams", workspaceId).as("teams"),
              countIn("service_accounts", workspaceId).as("service_accounts"),
              countIn("targets", workspaceId).as("targets"),
              countIn("certificate_authorities", workspaceId).as("cas"),
            ])
            .executeTakeFirstOrThrow(),
        );
        return {
          members: toNumber(row.members),
          teams: toNumber(row.teams),
          serviceAccounts: toNumber(row.service_accounts),
          targets: toNumber(row.targets),
          certificateAuthorities: toNumber(row.cas),
        };
      },
    },

    auditLog: createAuditLogRepository(run, dialect),
  };
}

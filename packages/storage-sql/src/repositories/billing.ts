/**
 * Billing accounts (`billing_accounts`) and the counts billing reports.
 *
 * @module
 */
import type {
  BillingAccountRecord,
  BillingAccountRepository,
  WorkspaceUsageRepository,
} from "@wap/core/storage";
import { type Insertable, type Selectable, sql } from "kysely";
import {
  fromDate,
  fromDateOrNull,
  fromFlag,
  toDate,
  toDateOrNull,
  toFlag,
  toJson,
  toNumber,
  toStringMap,
} from "../lib/mapping.js";
import { excludedColumns } from "../lib/queries.js";
import type { QueryRunner } from "../repositories.js";
import type { Database } from "../schema.js";
import type { BillingAccountsTable } from "../schema-sso-billing.js";

function rowToBillingAccount(r: Selectable<BillingAccountsTable>): BillingAccountRecord {
  return {
    workspaceId: r.workspace_id,
    provider: r.provider,
    customerId: r.customer_id,
    subscriptionId: r.subscription_id,
    productId: r.product_id,
    productName: r.product_name,
    status: r.status,
    cancelAtPeriodEnd: fromFlag(r.cancel_at_period_end),
    currentPeriodEnd: toDateOrNull(r.current_period_end),
    metadata: toStringMap(r.metadata),
    stateAt: toDate(r.state_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function billingAccountToRow(a: BillingAccountRecord): Insertable<BillingAccountsTable> {
  return {
    workspace_id: a.workspaceId,
    provider: a.provider,
    customer_id: a.customerId,
    subscription_id: a.subscriptionId,
    product_id: a.productId,
    product_name: a.productName,
    status: a.status,
    cancel_at_period_end: toFlag(a.cancelAtPeriodEnd),
    current_period_end: fromDateOrNull(a.currentPeriodEnd),
    metadata: toJson(a.metadata),
    state_at: fromDate(a.stateAt),
    created_at: fromDate(a.createdAt),
    updated_at: fromDate(a.updatedAt),
  };
}

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

export function createBillingAccountRepository(run: QueryRunner): BillingAccountRepository {
  return {
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
  };
}

export function createWorkspaceUsageRepository(run: QueryRunner): WorkspaceUsageRepository {
  return {
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
  };
}

/**
 * BillingService: GetBilling, CreateCheckout, CreatePortal and CancelSubscription.
 *
 * The provider's pages and cancellations are called first; what they change is stored, with its
 * audit entry, in one transaction afterwards. A provider that fails answers `unavailable` (the
 * cause is logged, not sent). With billing disabled (self-hosted), GetBilling says so and the
 * other calls answer `failed_precondition`.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BillingService } from "@wap/api";
import * as z from "zod";
import { accountConfig } from "../auth/account-config.js";
import { FailedPreconditionError, NotFoundError, PlatformError, UnavailableError } from "../errors.js";
import { integrationsOf } from "../operations/integrations.js";
import { defineOperation, type OperationCall } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import type { BillingAccountRecord } from "../storage/billing.js";
import { text, uuid } from "../validation/rules.js";
import { type BillingProvider, type SubscriptionState, selfHostedBilling } from "./provider.js";

/** The workspace's billing provider (the self-hosted default has billing off). */
export function billingOf(services: Services): BillingProvider {
  return integrationsOf(services).billing ?? selfHostedBilling;
}

/** Subscription statuses in which a workspace already pays (or is about to): no second checkout. */
const subscribedStatuses = new Set(["active", "trialing", "past_due", "unpaid", "incomplete", "paused"]);

const workspaceInput = z.object({ workspaceId: uuid.optional() });

function enabledProvider(services: Services): BillingProvider {
  const provider = billingOf(services);
  if (!provider.enabled) {
    throw new FailedPreconditionError("billing is disabled on this server (self-hosted)", {
      reason: "BILLING_DISABLED",
    });
  }
  return provider;
}

/** Runs a provider call; its own failures become `unavailable` (the cause is logged by the server). */
async function viaProvider<T>(provider: BillingProvider, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof PlatformError) throw error;
    throw new UnavailableError(`the billing provider (${provider.name}) failed; try again shortly`, {
      reason: "BILLING_PROVIDER_FAILED",
      cause: error,
    });
  }
}

/** The stored account with `state` applied, unless the stored state is newer. */
export function applyState(
  account: BillingAccountRecord,
  state: SubscriptionState,
  now: Date,
): BillingAccountRecord | null {
  if (state.stateAt.getTime() < account.stateAt.getTime()) return null;
  return { ...account, ...state, updatedAt: now };
}

function billingLink(services: Services, workspaceId: string, query = ""): string {
  return `${accountConfig(services).publicBaseUrl}/workspaces/${workspaceId}/billing${query}`;
}

export const getBilling = defineOperation({
  method: BillingService.method.getBilling,
  access: { kind: "workspace", permission: "billing.read" },
  input: workspaceInput,
  async run({ services, workspace }) {
    const [account, counts] = await Promise.all([
      services.storage.billingAccounts.find(workspace.workspaceId),
      services.storage.workspaceUsage.counts(workspace.workspaceId),
    ]);
    return {
      billingEnabled: billingOf(services).enabled,
      // Without a billing account there is nothing to say: the fields stay unset.
      ...(account
        ? {
            customerId: account.customerId,
            productId: account.productId,
            productName: account.productName,
            status: account.status,
            cancelAtPeriodEnd: account.cancelAtPeriodEnd,
            metadata: { ...account.metadata },
          }
        : {}),
      ...(account?.currentPeriodEnd ? { currentPeriodEnd: timestampFromDate(account.currentPeriodEnd) } : {}),
      counts: {
        members: BigInt(counts.members),
        teams: BigInt(counts.teams),
        serviceAccounts: BigInt(counts.serviceAccounts),
        targets: BigInt(counts.targets),
        cas: BigInt(counts.certificateAuthorities),
      },
    };
  },
});

/** A workspace's billing account with a customer at `provider` and no subscription yet. */
export function blankBillingAccount(
  workspaceId: string,
  provider: string,
  customerId: string,
  now: Date,
): BillingAccountRecord {
  return {
    workspaceId,
    provider,
    customerId,
    subscriptionId: "",
    productId: "",
    productName: "",
    status: "",
    cancelAtPeriodEnd: false,
    currentPeriodEnd: null,
    metadata: {},
    // Any state a webhook brings is newer than "no subscription yet".
    stateAt: new Date(0),
    createdAt: now,
    updatedAt: now,
  };
}

/** The billing account of the call's workspace, creating the provider's customer the first time. */
async function ensureCustomer(call: OperationCall<unknown>, provider: BillingProvider) {
  const { services, workspace, ctx, now } = call;
  const existing = await services.storage.billingAccounts.find(workspace.workspaceId);
  if (existing && existing.provider === provider.name) return { account: existing, created: false };
  const record = await services.storage.workspaces.findById(workspace.workspaceId);
  if (!record) throw new NotFoundError(`workspace ${workspace.workspaceId} not found`);
  const user = ctx.caller.kind === "user" ? await services.storage.users.findById(ctx.caller.userId) : null;
  const { customerId } = await viaProvider(provider, () =>
    provider.createCustomer({
      workspaceId: workspace.workspaceId,
      workspaceName: record.name,
      email: user?.email ?? "",
    }),
  );
  return {
    account: blankBillingAccount(workspace.workspaceId, provider.name, customerId, now),
    created: true,
  };
}

export const createCheckout = defineOperation({
  method: BillingService.method.createCheckout,
  access: { kind: "workspace", permission: "billing.manage" },
  input: workspaceInput,
  async run(call) {
    const { services, workspace } = call;
    const provider = enabledProvider(services);
    const { account, created } = await ensureCustomer(call, provider);
    if (account.subscriptionId !== "" && subscribedStatuses.has(account.status)) {
      throw new FailedPreconditionError(
        `this workspace already has a subscription (${account.status}): change it in the billing portal (CreatePortal)`,
        { reason: "ALREADY_SUBSCRIBED" },
      );
    }
    const { url } = await viaProvider(provider, () =>
      provider.createCheckout({
        workspaceId: workspace.workspaceId,
        customerId: account.customerId,
        successUrl: billingLink(services, workspace.workspaceId, "?checkout=success"),
        cancelUrl: billingLink(services, workspace.workspaceId, "?checkout=cancel"),
      }),
    );
    await services.storage.transaction(async (tx) => {
      if (created) await tx.billingAccounts.upsert(account);
      await call.audit(tx, {
        action: "billing.checkout.create",
        resource: `billing_customer:${account.customerId}`,
      });
    });
    return { url };
  },
});

export const createPortal = defineOperation({
  method: BillingService.method.createPortal,
  access: { kind: "workspace", permission: "billing.manage" },
  input: workspaceInput,
  async run(call) {
    const { services, workspace } = call;
    const provider = enabledProvider(services);
    const account = await services.storage.billingAccounts.find(workspace.workspaceId);
    if (!account || account.provider !== provider.name) {
      throw new FailedPreconditionError(
        "this workspace has no billing account yet: subscribe first (CreateCheckout)",
        { reason: "NO_BILLING_ACCOUNT" },
      );
    }
    const { url } = await viaProvider(provider, () =>
      provider.createPortal({
        customerId: account.customerId,
        returnUrl: billingLink(services, workspace.workspaceId),
      }),
    );
    await services.storage.transaction((tx) =>
      call.audit(tx, { action: "billing.portal.create", resource: `billing_customer:${account.customerId}` }),
    );
    return { url };
  },
});

export const cancelSubscription = defineOperation({
  method: BillingService.method.cancelSubscription,
  access: { kind: "workspace", permission: "billing.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    immediate: z.boolean().optional(),
    reason: text({ max: 1000 }).optional(),
  }),
  async run(call) {
    const { services, workspace, input, now } = call;
    const provider = enabledProvider(services);
    const account = await services.storage.billingAccounts.find(workspace.workspaceId);
    if (
      !account ||
      account.provider !== provider.name ||
      account.subscriptionId === "" ||
      account.status === "canceled"
    ) {
      throw new FailedPreconditionError("this workspace has no subscription to cancel", {
        reason: "NO_SUBSCRIPTION",
      });
    }
    const state = await viaProvider(provider, () =>
      provider.cancelSubscription({
        customerId: account.customerId,
        subscriptionId: account.subscriptionId,
        immediate: input.immediate ?? false,
        reason: input.reason ?? "",
        now,
      }),
    );
    await services.storage.transaction(async (tx) => {
      const current = (await tx.billingAccounts.find(workspace.workspaceId)) ?? account;
      const next = applyState(current, state, now);
      if (next) await tx.billingAccounts.upsert(next);
      await call.audit(tx, {
        action: input.immediate ? "billing.subscription.cancel" : "billing.subscription.cancel_at_period_end",
        resource: `billing_subscription:${account.subscriptionId}`,
      });
    });
    return {};
  },
});

export const billingOperations = [getBilling, createCheckout, createPortal, cancelSubscription];

/**
 * The billing provider's webhook, for the server to mount (`POST /v1/billing/webhook`, raw body):
 * verify the signature, then store the subscription state it carries with an audit entry, in one
 * transaction. Each event is applied once: its id is remembered in the same transaction, so a
 * retried delivery changes nothing, and a failed one is retried by the provider.
 *
 * @module
 */

import { appendAudit, noRequest, type RequestFacts } from "../audit/record.js";
import { integrationsOf } from "../operations/integrations.js";
import type { Services } from "../operations/services.js";
import { applyState, blankBillingAccount } from "./operations.js";
import { BillingWebhookError, selfHostedBilling } from "./provider.js";

/** How long a delivered event id is remembered (providers retry for up to three days). */
const eventMemoryMs = 7 * 24 * 3600 * 1000;

/** What the server answers the provider: any result means 2xx; errors mean 400 (forged) or 5xx (retry). */
export interface BillingWebhookResult {
  /** False for events the platform does not act on, repeats, stale states and unknown customers. */
  readonly applied: boolean;
  /** Why nothing was applied, for the server's log. */
  readonly note?: "ignored" | "duplicate" | "stale" | "unknown_customer";
  readonly workspaceId?: string;
}

/**
 * Handles one webhook delivery. Throws {@link BillingWebhookError} for a delivery that is not
 * authentic (answer 400) and any other error for a failure worth a retry (answer 500).
 */
export async function handleBillingWebhook(
  services: Services,
  delivery: { readonly body: string | Uint8Array; readonly signature: string },
  request: RequestFacts = noRequest,
): Promise<BillingWebhookResult> {
  const provider = integrationsOf(services).billing ?? selfHostedBilling;
  if (!provider.enabled) throw new BillingWebhookError("billing is disabled on this server");
  const now = services.clock.now();
  const event = await provider.readWebhook(delivery.body, delivery.signature, now);
  if (event.kind === "ignored") return { applied: false, note: "ignored" };
  const { state } = event;

  return services.storage.transaction(async (tx): Promise<BillingWebhookResult> => {
    const fresh = await tx.requestNonces.claim(
      `billing-webhook:${provider.name}`,
      event.eventId,
      new Date(now.getTime() + eventMemoryMs),
      now,
    );
    if (!fresh) return { applied: false, note: "duplicate" };
    let account = await tx.billingAccounts.findByCustomer(provider.name, state.customerId);
    if (!account && event.workspaceId !== undefined && (await tx.workspaces.findById(event.workspaceId))) {
      // The checkout set the workspace on the subscription; its customer was made elsewhere.
      account =
        (await tx.billingAccounts.find(event.workspaceId)) ??
        blankBillingAccount(event.workspaceId, provider.name, state.customerId, now);
      account = { ...account, provider: provider.name, customerId: state.customerId };
    }
    if (!account) return { applied: false, note: "unknown_customer" };
    const next = applyState(account, state, now);
    if (!next) return { applied: false, note: "stale", workspaceId: account.workspaceId };
    await tx.billingAccounts.upsert(next);
    await appendAudit(tx, services, request, {
      workspaceId: account.workspaceId,
      actorType: "billing_provider",
      actorId: provider.name,
      action: "billing.subscription.update",
      resource: `billing_subscription:${state.subscriptionId}`,
      at: now,
    });
    return { applied: true, workspaceId: account.workspaceId };
  });
}

/**
 * The Stripe billing provider, on the official `stripe` package: hosted checkout and customer
 * portal sessions, cancellation, and webhooks verified with the endpoint's signing secret.
 *
 * Webhooks are treated as "something changed": the subscription is read back from Stripe (with
 * its product) so the stored state is always Stripe's latest, whatever order events arrive in.
 *
 * @module
 */
import type Stripe from "stripe";
import {
  type BillingProvider,
  BillingWebhookError,
  type BillingWebhookEvent,
  type SubscriptionState,
} from "./provider.js";

export interface StripeBillingOptions {
  /** The secret API key (`sk_live_...` / `sk_test_...`). */
  readonly secretKey: string;
  /** The signing secret of the webhook endpoint (`whsec_...`). */
  readonly webhookSecret: string;
  /** The price a checkout subscribes the workspace to. */
  readonly priceId: string;
  /** Where the Stripe API is. Default api.stripe.com, 443, https; tests point it at a local server. */
  readonly host?: string;
  readonly port?: number;
  readonly protocol?: "http" | "https";
  /** Time limit of each API request. Default 20 s. */
  readonly timeoutMs?: number;
  /** Retries of failed API requests (idempotent ones are safe to retry). Default 2. */
  readonly maxNetworkRetries?: number;
  /** Webhooks signed longer ago than this are refused (replay window). Default 300 s. */
  readonly webhookToleranceSeconds?: number;
}

/** The subscription events that change what a workspace has. */
const subscriptionEvents = new Set([
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "customer.subscription.paused",
  "customer.subscription.resumed",
  "customer.subscription.pending_update_applied",
  "customer.subscription.pending_update_expired",
]);

const expandProduct = ["items.data.price.product"];

function idOf(value: string | { id: string } | null | undefined): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : value.id;
}

function stateOf(subscription: Stripe.Subscription, stateAt: Date): SubscriptionState {
  const item = subscription.items.data[0];
  const product = item?.price.product;
  const periodEnd = item?.current_period_end;
  return {
    customerId: idOf(subscription.customer),
    subscriptionId: subscription.id,
    productId: idOf(product),
    productName: typeof product === "object" && product !== null && "name" in product ? product.name : "",
    status: subscription.status,
    cancelAtPeriodEnd: subscription.cancel_at_period_end,
    currentPeriodEnd: typeof periodEnd === "number" ? new Date(periodEnd * 1000) : null,
    metadata: { ...subscription.metadata },
    stateAt,
  };
}

/**
 * A billing provider over Stripe.
 *
 * @example
 * ```ts
 * const billing = createStripeBillingProvider({ secretKey, webhookSecret, priceId: "price_123" });
 * ```
 */
export function createStripeBillingProvider(options: StripeBillingOptions): BillingProvider {
  // The `stripe` package is loaded at the first call: an application that never bills never loads it.
  let client: Promise<Stripe> | undefined;
  const stripeClient = () =>
    (client ??= import("stripe").then(
      ({ default: StripeClient }) =>
        new StripeClient(options.secretKey, {
          ...(options.host === undefined ? {} : { host: options.host }),
          ...(options.port === undefined ? {} : { port: options.port }),
          ...(options.protocol === undefined ? {} : { protocol: options.protocol }),
          timeout: options.timeoutMs ?? 20_000,
          maxNetworkRetries: options.maxNetworkRetries ?? 2,
          appInfo: { name: "workspace-access-platform" },
        }),
    ));
  const tolerance = options.webhookToleranceSeconds ?? 300;

  const latest = async (subscriptionId: string, stateAt: Date) =>
    stateOf(
      await (await stripeClient()).subscriptions.retrieve(subscriptionId, { expand: expandProduct }),
      stateAt,
    );

  return {
    name: "stripe",
    enabled: true,
    async createCustomer({ workspaceId, workspaceName, email }) {
      const stripe = await stripeClient();
      const customer = await stripe.customers.create(
        { email, name: workspaceName, metadata: { workspace_id: workspaceId } },
        // Two racing first checkouts of a workspace create one customer, not two.
        { idempotencyKey: `wap-customer-${workspaceId}` },
      );
      return { customerId: customer.id };
    },
    async createCheckout({ workspaceId, customerId, successUrl, cancelUrl }) {
      const stripe = await stripeClient();
      const session = await stripe.checkout.sessions.create({
        mode: "subscription",
        customer: customerId,
        client_reference_id: workspaceId,
        line_items: [{ price: options.priceId, quantity: 1 }],
        metadata: { workspace_id: workspaceId },
        subscription_data: { metadata: { workspace_id: workspaceId } },
        success_url: successUrl,
        cancel_url: cancelUrl,
      });
      if (!session.url) throw new Error(`Stripe returned checkout session ${session.id} without a URL`);
      return { url: session.url };
    },
    async createPortal({ customerId, returnUrl }) {
      const stripe = await stripeClient();
      const session = await stripe.billingPortal.sessions.create({
        customer: customerId,
        return_url: returnUrl,
      });
      return { url: session.url };
    },
    async cancelSubscription({ subscriptionId, immediate, reason, now }) {
      const stripe = await stripeClient();
      const details = reason === "" ? {} : { cancellation_details: { comment: reason } };
      const subscription = immediate
        ? await stripe.subscriptions.cancel(subscriptionId, { ...details, expand: expandProduct })
        : await stripe.subscriptions.update(subscriptionId, {
            ...details,
            cancel_at_period_end: true,
            expand: expandProduct,
          });
      return stateOf(subscription, now);
    },
    async readWebhook(body, signature, now): Promise<BillingWebhookEvent> {
      const stripe = await stripeClient();
      let event: Stripe.Event;
      try {
        event = await stripe.webhooks.constructEventAsync(
          typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
          signature,
          options.webhookSecret,
          tolerance,
          undefined,
          now.getTime(),
        );
      } catch (error) {
        throw new BillingWebhookError("the Stripe webhook signature does not verify", { cause: error });
      }
      const stateAt = new Date(event.created * 1000);
      if (event.type === "checkout.session.completed") {
        const session = event.data.object;
        const subscriptionId = idOf(session.subscription);
        if (subscriptionId === "") return { kind: "ignored", eventId: event.id, type: event.type };
        const workspaceId = session.client_reference_id ?? session.metadata?.workspace_id;
        return {
          kind: "subscription",
          eventId: event.id,
          ...(workspaceId ? { workspaceId } : {}),
          state: await latest(subscriptionId, stateAt),
        };
      }
      if (subscriptionEvents.has(event.type)) {
        const subscription = event.data.object as Stripe.Subscription;
        const workspaceId = subscription.metadata?.workspace_id;
        return {
          kind: "subscription",
          eventId: event.id,
          ...(workspaceId ? { workspaceId } : {}),
          state: await latest(subscription.id, stateAt),
        };
      }
      return { kind: "ignored", eventId: event.id, type: event.type };
    },
  };
}

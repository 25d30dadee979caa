/**
 * The billing port: what a payment provider does for the platform. Core keeps the subscription
 * state of each workspace in storage; the provider creates hosted pages (checkout, portal),
 * cancels, and turns its signed webhooks into state. The self-hosted default has billing off.
 *
 * @module
 */
import { FailedPreconditionError } from "../errors.js";

/** A subscription as the provider reports it. */
export interface SubscriptionState {
  readonly customerId: string;
  /** Empty when the customer has no subscription. */
  readonly subscriptionId: string;
  readonly productId: string;
  readonly productName: string;
  /** The provider's status string (Stripe: active, trialing, past_due, canceled, ...). */
  readonly status: string;
  readonly cancelAtPeriodEnd: boolean;
  readonly currentPeriodEnd: Date | null;
  readonly metadata: Readonly<Record<string, string>>;
  /** When the provider produced this state: a late, older webhook never overwrites a newer one. */
  readonly stateAt: Date;
}

/** What a verified webhook said. */
export type BillingWebhookEvent =
  /** A subscription changed; `workspaceId` when the provider carries it (set at checkout). */
  | {
      readonly kind: "subscription";
      readonly eventId: string;
      readonly workspaceId?: string;
      readonly state: SubscriptionState;
    }
  /** An event the platform does not act on. */
  | { readonly kind: "ignored"; readonly eventId: string; readonly type: string };

/** A webhook whose signature, timestamp or body did not check out. */
export class BillingWebhookError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BillingWebhookError";
  }
}

/** A payment provider. Methods of a disabled provider are never called. */
export interface BillingProvider {
  /** e.g. "stripe"; stored with each billing account. */
  readonly name: string;
  /** False for the self-hosted default: GetBilling says so and the other calls are refused. */
  readonly enabled: boolean;
  /** Creates the provider's customer for a workspace (once; the id is kept). */
  createCustomer(input: {
    readonly workspaceId: string;
    readonly workspaceName: string;
    readonly email: string;
  }): Promise<{ readonly customerId: string }>;
  /** A hosted checkout page subscribing the customer. */
  createCheckout(input: {
    readonly workspaceId: string;
    readonly customerId: string;
    readonly successUrl: string;
    readonly cancelUrl: string;
  }): Promise<{ readonly url: string }>;
  /** A hosted page where the customer manages payment methods, invoices and the plan. */
  createPortal(input: {
    readonly customerId: string;
    readonly returnUrl: string;
  }): Promise<{ readonly url: string }>;
  /** Cancels now (`immediate`) or at the end of the paid period; returns the new state. */
  cancelSubscription(input: {
    readonly customerId: string;
    readonly subscriptionId: string;
    readonly immediate: boolean;
    readonly reason: string;
    /** Stamps the returned state (`stateAt`). */
    readonly now: Date;
  }): Promise<SubscriptionState>;
  /**
   * Verifies a webhook (the raw body exactly as received, and its signature header) at `now`
   * and reads it. Throws {@link BillingWebhookError} when it is not authentic.
   */
  readWebhook(body: string | Uint8Array, signature: string, now: Date): Promise<BillingWebhookEvent>;
}

const disabled = () =>
  new FailedPreconditionError(
    "billing is disabled on this server (self-hosted): there is nothing to buy or cancel",
    { reason: "BILLING_DISABLED" },
  );

/** The self-hosted default: no payment provider, every workspace has everything. */
export const selfHostedBilling: BillingProvider = Object.freeze({
  name: "none",
  enabled: false,
  createCustomer: async () => Promise.reject(disabled()),
  createCheckout: async () => Promise.reject(disabled()),
  createPortal: async () => Promise.reject(disabled()),
  cancelSubscription: async () => Promise.reject(disabled()),
  readWebhook: async () => Promise.reject(new BillingWebhookError("billing is disabled on this server")),
});

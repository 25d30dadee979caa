/**
 * Reasons of billing (subscriptions, checkout, the provider's webhook).
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const billingReasons = {
  BILLING_DISABLED: {
    code: "failed_precondition",
    description: "This server runs without billing (self-hosted); there is nothing to buy or cancel.",
  },
  BILLING_PROVIDER_FAILED: {
    code: "unavailable",
    description: "The billing provider failed or could not be reached; retry shortly.",
  },
  ALREADY_SUBSCRIBED: {
    code: "failed_precondition",
    description: "The workspace has a subscription already; change it in the billing portal instead.",
  },
  NO_BILLING_ACCOUNT: {
    code: "failed_precondition",
    description: "The workspace has no billing account yet; subscribe first (CreateCheckout).",
  },
  NO_SUBSCRIPTION: {
    code: "failed_precondition",
    description: "The workspace has no subscription to cancel.",
  },
  BILLING_WEBHOOK_INVALID: {
    code: "invalid_argument",
    description:
      "A billing webhook call has a bad signature or body; the provider should resend it signed with the configured secret.",
  },
} as const satisfies ReasonTable;

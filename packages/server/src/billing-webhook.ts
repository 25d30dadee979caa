/**
 * `POST /v1/billing/webhook`: the billing provider's webhook, handed to core's
 * `handleBillingWebhook` with the body exactly as received (the signature covers its bytes).
 *
 * Answers: 200 when handled (also for repeats and events we ignore: the provider must stop
 * retrying), 400 when not authentic (`BillingWebhookError`: bad signature, too old, billing off),
 * 500 for anything else, so the provider retries; the cause goes to the log, not the answer.
 *
 * @module
 */
import { BillingWebhookError, handleBillingWebhook } from "@wap/core/internal";
import { Hono } from "hono";
import type { EdgeSettings } from "./edge.js";
import { admitted, type Env, requestFacts } from "./endpoint-edge.js";
import { errorResponse, publicError, refusalResponse } from "./error-responses.js";
import type { PublicError } from "./errors.js";
import { readBodyBytes } from "./read-body.js";

export const billingWebhookPath = "/v1/billing/webhook";

/** Stripe's header; the one provider there is. Another provider brings its own header here. */
const signatureHeader = "stripe-signature";

export interface BillingWebhookSettings {
  readonly edge: EdgeSettings;
  /** Largest body accepted, in bytes. */
  readonly bodyLimitBytes: number;
}

/** The webhook endpoint, to mount before the REST catch-all. */
export function billingWebhookRoutes(settings: BillingWebhookSettings): Hono<Env> {
  const app = new Hono<Env>();
  const { logger } = settings.edge;

  app.post(billingWebhookPath, async (c) => {
    const { edge, refusal } = admitted(c);
    const fail = (error: unknown) => refusalResponse(edge, error, logger);
    // Failures logged here, with the provider in mind, answered without a second log line.
    const answerWith = (answer: PublicError) => {
      edge.code = answer.code;
      edge.reason = answer.reason;
      return errorResponse(answer);
    };
    if (refusal) return fail(refusal);
    let body: Uint8Array;
    try {
      // As bytes, not text: the signature covers them, and decoding could alter them (a BOM).
      body = await readBodyBytes(c.req.raw, settings.bodyLimitBytes);
    } catch (error) {
      return fail(error);
    }
    try {
      const result = await handleBillingWebhook(
        settings.edge.platform.services,
        { body, signature: c.req.header(signatureHeader) ?? "" },
        requestFacts(edge),
      );
      edge.code = "ok";
      logger.info("billing webhook", {
        requestId: edge.requestId,
        applied: result.applied,
        ...(result.note && { note: result.note }),
        ...(result.workspaceId && { workspaceId: result.workspaceId }),
      });
      return c.json({ received: true, applied: result.applied }, 200, { "Cache-Control": "no-store" });
    } catch (error) {
      if (error instanceof BillingWebhookError) {
        logger.warn("billing webhook refused", { requestId: edge.requestId, reason: error.message });
        return answerWith(publicError("invalid_argument", error.message, "BILLING_WEBHOOK_INVALID"));
      }
      logger.error("billing webhook failed; the provider will retry it", {
        requestId: edge.requestId,
        error: describe(error),
      });
      return answerWith(publicError("internal", `internal error (request id ${edge.requestId})`, "INTERNAL"));
    }
  });

  return app;
}

/** The error and its causes, for the log: messages only (provider errors carry no secrets). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause === undefined ? "" : `; caused by ${describe(error.cause)}`;
  return `${error.name}: ${error.message}${cause}`;
}

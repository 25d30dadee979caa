/**
 * `POST /v1/billing/webhook` through the running server, with the Stripe provider against a local
 * server answering the Stripe API: a signed event updates GetBilling; a bad signature is 400 and
 * changes nothing; a repeat is acknowledged once; a Stripe outage is 500 (retried) without a word
 * about its cause; the endpoint is exempt from CSRF.
 */
import { createHmac } from "node:crypto";
import { createStripeBillingProvider } from "@wap/core";
import { type FakeStripe, startFakeStripe } from "@wap/test-kit/fake-stripe";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const webhookSecret = "whsec_server_test_secret";
const secretKey = "sk_test_server_123";

/** The `Stripe-Signature` header Stripe sends: HMAC-SHA256 of `<t>.<body>` with the endpoint secret. */
function stripeSignature(body: string, secret = webhookSecret, timestamp = Math.floor(Date.now() / 1000)) {
  const mac = createHmac("sha256", secret).update(`${timestamp}.${body}`, "utf8").digest("hex");
  return `t=${timestamp},v1=${mac}`;
}

let eventCounter = 0;
function subscriptionEvent(subscriptionId: string, customer: string, workspaceId: string) {
  return JSON.stringify({
    id: `evt_server_${++eventCounter}`,
    object: "event",
    api_version: "2026-10-28.endive",
    created: Math.floor(Date.now() / 1000),
    type: "customer.subscription.updated",
    data: {
      object: {
        id: subscriptionId,
        object: "subscription",
        customer,
        metadata: { workspace_id: workspaceId },
      },
    },
  });
}

describe("the billing webhook", () => {
  let stripe: FakeStripe;
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let customer: string;

  const deliver = (body: string, signature: string, headers: Record<string, string> = {}) =>
    restCall(server.url, "POST", "/v1/billing/webhook", undefined, {
      rawBody: body,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "stripe-signature": signature,
        ...headers,
      },
    });
  const billing = async () => {
    const answer = await restCall(
      server.url,
      "GET",
      `/v1/billing/subscription?workspaceId=${owner.workspaceId}`,
      undefined,
      { token: owner.accessToken },
    );
    expect(answer.status).toBe(200);
    return answer.body;
  };

  beforeAll(async () => {
    stripe = await startFakeStripe();
    server = await startTestServer({
      integrations: {
        billing: createStripeBillingProvider({
          secretKey,
          webhookSecret,
          priceId: "price_team",
          host: "127.0.0.1",
          port: stripe.port,
          protocol: "http",
          maxNetworkRetries: 0,
        }),
      },
    });
    owner = await signUpWithWorkspace(server.url, "payer");
    // A checkout creates the workspace's Stripe customer.
    const checkout = await restCall(
      server.url,
      "POST",
      `/v1/billing/checkout?workspaceId=${owner.workspaceId}`,
      undefined,
      { token: owner.accessToken },
    );
    expect(checkout.status).toBe(200);
    customer = stripe.requests.find((r) => r.path === "/v1/checkout/sessions")!.form.get("customer")!;
    stripe.subscriptions.set("sub_1", {
      id: "sub_1",
      customer,
      status: "active",
      cancel_at_period_end: false,
      current_period_end: Math.floor(Date.now() / 1000) + 30 * 86_400,
      metadata: { workspace_id: owner.workspaceId },
      product: { id: "prod_team", name: "Team" },
    });
  });
  afterAll(async () => {
    await server?.close();
    await stripe?.close();
  });

  it("applies a signed event (once), whatever cookie or origin comes with it", async () => {
    expect((await billing()).billingEnabled).toBe(true);
    expect((await billing()).status).toBe("");
    const body = subscriptionEvent("sub_1", customer, owner.workspaceId);
    // A browser-looking request with a session cookie from elsewhere: no CSRF refusal here.
    const delivered = await deliver(body, stripeSignature(body), {
      cookie: `session=${owner.accessToken}`,
      origin: "https://stripe.example",
    });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toEqual({ received: true, applied: true });
    expect(await billing()).toMatchObject({ status: "active", productId: "prod_team", productName: "Team" });

    const again = await deliver(body, stripeSignature(body));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ received: true, applied: false });
  });

  it("refuses a bad signature, a tampered body and an old delivery with 400, changing nothing", async () => {
    stripe.subscriptions.get("sub_1")!.status = "canceled";
    const body = subscriptionEvent("sub_1", customer, owner.workspaceId);
    const forged = await deliver(body, stripeSignature(body, "whsec_someone_else"));
    expect(forged.status).toBe(400);
    expect(forged.body.details[0].reason).toBe("BILLING_WEBHOOK_INVALID");
    expect(forged.body.message).toMatch(/signature/);

    const tampered = await deliver(body.replace("sub_1", "sub_2"), stripeSignature(body));
    expect(tampered.status).toBe(400);
    const old = await deliver(
      body,
      stripeSignature(body, webhookSecret, Math.floor(Date.now() / 1000) - 3600),
    );
    expect(old.status).toBe(400);
    expect((await deliver(body, "")).status).toBe(400);
    expect((await billing()).status).toBe("active");
  });

  it("answers 500 without internals while Stripe is down; the retry applies", async () => {
    const body = subscriptionEvent("sub_1", customer, owner.workspaceId);
    stripe.failWith = 500;
    try {
      const failed = await deliver(body, stripeSignature(body));
      expect(failed.status).toBe(500);
      expect(failed.body.message).toMatch(/^internal error \(request id [\w-]+\)$/);
      expect(JSON.stringify(failed.body)).not.toContain("bad day");
      expect(server.logs.some((l) => l.includes("billing webhook failed") && l.includes("bad day"))).toBe(
        true,
      );
    } finally {
      stripe.failWith = undefined;
    }
    const retried = await deliver(body, stripeSignature(body));
    expect(retried.body).toEqual({ received: true, applied: true });
    expect((await billing()).status).toBe("canceled");
  });

  it("never logs the Stripe secrets or the signature", () => {
    const logs = server.logs.join("");
    expect(logs).not.toContain(webhookSecret);
    expect(logs).not.toContain(secretKey);
    expect(logs).not.toContain("v1=");
  });
});

describe("the billing webhook with billing disabled (self-hosted)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("refuses every delivery with 400", async () => {
    const body = JSON.stringify({ id: "evt_x", type: "customer.subscription.updated" });
    const answer = await restCall(server.url, "POST", "/v1/billing/webhook", undefined, {
      rawBody: body,
      headers: { "stripe-signature": stripeSignature(body) },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.message).toMatch(/disabled/);
  });
});

/**
 * BillingService with the self-hosted default (billing off) and with the Stripe provider against
 * a local server that answers the Stripe API: checkout, portal, cancellation, and webhooks whose
 * signature is verified before they change the stored subscription.
 */
import { toJson } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  BillingService,
  CertificateKeyType,
  CertificateService,
  GetBillingResponseSchema,
  ServiceAccountService,
  UtilService,
} from "@wap/api";
import { type FakeStripe, startFakeStripe } from "@wap/test-kit/fake-stripe";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BillingWebhookError } from "../src/billing/provider.js";
import { createStripeBillingProvider } from "../src/billing/stripe.js";
import { handleBillingWebhook } from "../src/billing/webhook.js";
import { addMember, useIntegrations } from "./support/enterprise.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const webhookSecret = "whsec_test_secret";
const signer = new Stripe("sk_test_signer");

describe("billing disabled (self-hosted default)", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await createTestPlatform();
  });
  afterAll(() => t.platform.close());

  it("GetBilling says billing is off and counts the workspace (int64 as JSON strings)", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    await t.call(owner.caller, ServiceAccountService.method.createServiceAccount, { ...ws, name: "bot-1" });
    await t.call(owner.caller, ServiceAccountService.method.createServiceAccount, { ...ws, name: "bot-2" });
    await t.call(owner.caller, CertificateService.method.createCertificateAuthority, {
      ...ws,
      name: "ca",
      keyType: CertificateKeyType.ED25519,
    });
    const billing = await t.call(owner.caller, BillingService.method.getBilling, ws);
    expect(billing.billingEnabled).toBe(false);
    expect(billing.status).toBe("");
    expect(toJson(GetBillingResponseSchema, billing)).toEqual({
      billingEnabled: false,
      counts: { members: "1", teams: "0", serviceAccounts: "2", targets: "0", cas: "1" },
    });
  });

  it("checkout, portal and cancel answer failed_precondition; webhooks are refused", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    for (const call of [
      t.call(owner.caller, BillingService.method.createCheckout, ws),
      t.call(owner.caller, BillingService.method.createPortal, ws),
      t.call(owner.caller, BillingService.method.cancelSubscription, { ...ws, immediate: true }),
    ]) {
      expect((await expectCode(call, "failed_precondition")).reason).toBe("BILLING_DISABLED");
    }
    await expect(
      handleBillingWebhook(t.platform.services, { body: "{}", signature: "" }),
    ).rejects.toBeInstanceOf(BillingWebhookError);
  });

  it("billing.read is for admins and owners; billing.manage for owners", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    const admin = await t.signUp();
    const editor = await t.signUp();
    await addMember(t.storage, owner.workspaceId, admin.caller.userId, "admin");
    await addMember(t.storage, owner.workspaceId, editor.caller.userId, "editor");
    await t.call(admin.caller, BillingService.method.getBilling, ws);
    await expectCode(t.call(admin.caller, BillingService.method.createCheckout, ws), "permission_denied");
    await expectCode(t.call(admin.caller, BillingService.method.cancelSubscription, ws), "permission_denied");
    await expectCode(t.call(editor.caller, BillingService.method.getBilling, ws), "permission_denied");
  });
});

describe("Stripe billing", () => {
  let t: TestPlatform;
  let stripe: FakeStripe;
  beforeAll(async () => {
    stripe = await startFakeStripe();
    t = await createTestPlatform();
    useIntegrations(t.platform, {
      billing: createStripeBillingProvider({
        secretKey: "sk_test_123",
        webhookSecret,
        priceId: "price_team",
        host: "127.0.0.1",
        port: stripe.port,
        protocol: "http",
        maxNetworkRetries: 0,
      }),
    });
  });
  afterAll(async () => {
    await t.platform.close();
    await stripe.close();
  });

  /** A webhook delivery as Stripe signs it, at the platform's current time unless told otherwise. */
  function delivery(event: Record<string, unknown>, options: { timestamp?: number; secret?: string } = {}) {
    const nowSeconds = Math.floor(t.clock.now().getTime() / 1000);
    const body = JSON.stringify({
      object: "event",
      api_version: "2026-10-28.endive",
      created: nowSeconds,
      ...event,
    });
    const signature = signer.webhooks.generateTestHeaderString({
      payload: body,
      secret: options.secret ?? webhookSecret,
      timestamp: options.timestamp ?? nowSeconds,
    });
    return { body, signature };
  }

  let eventCounter = 0;
  const checkoutCompleted = (workspaceId: string, subscriptionId: string, customer: string) =>
    delivery({
      id: `evt_${++eventCounter}`,
      type: "checkout.session.completed",
      data: {
        object: {
          id: "cs_1",
          object: "checkout.session",
          customer,
          subscription: subscriptionId,
          client_reference_id: workspaceId,
          metadata: { workspace_id: workspaceId },
        },
      },
    });

  it("checkout creates the customer once, subscribes through a webhook, then the portal and cancel work", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    const first = await t.call(owner.caller, BillingService.method.createCheckout, ws);
    expect(first.url).toMatch(/^https:\/\/checkout\.stripe\.test\//);
    const customerCall = stripe.requests.find((r) => r.path === "/v1/customers")!;
    expect(customerCall.headers.authorization).toBe("Bearer sk_test_123");
    expect(customerCall.headers["idempotency-key"]).toBe(`wap-customer-${owner.workspaceId}`);
    expect(customerCall.form.get("email")).toBe(owner.email);
    expect(customerCall.form.get("metadata[workspace_id]")).toBe(owner.workspaceId);
    const checkoutCall = stripe.requests.findLast((r) => r.path === "/v1/checkout/sessions")!;
    expect(Object.fromEntries(checkoutCall.form)).toMatchObject({
      mode: "subscription",
      customer: "cus_1",
      client_reference_id: owner.workspaceId,
      "line_items[0][price]": "price_team",
      "line_items[0][quantity]": "1",
      "subscription_data[metadata][workspace_id]": owner.workspaceId,
      success_url: `http://localhost:8080/workspaces/${owner.workspaceId}/billing?checkout=success`,
    });
    await t.call(owner.caller, BillingService.method.createCheckout, ws);
    expect(stripe.requests.filter((r) => r.path === "/v1/customers")).toHaveLength(1);
    expect((await t.storage.billingAccounts.find(owner.workspaceId))?.customerId).toBe("cus_1");

    // Stripe says the checkout completed.
    const periodEnd = Math.floor(t.clock.now().getTime() / 1000) + 30 * 86_400;
    stripe.subscriptions.set("sub_1", {
      id: "sub_1",
      customer: "cus_1",
      status: "active",
      cancel_at_period_end: false,
      current_period_end: periodEnd,
      metadata: { workspace_id: owner.workspaceId },
      product: { id: "prod_team", name: "Team" },
    });
    const completed = checkoutCompleted(owner.workspaceId, "sub_1", "cus_1");
    expect(await handleBillingWebhook(t.platform.services, completed)).toEqual({
      applied: true,
      workspaceId: owner.workspaceId,
    });
    const retrieve = stripe.requests.findLast((r) => r.path === "/v1/subscriptions/sub_1")!;
    expect(retrieve.method).toBe("GET");
    expect([...retrieve.query].filter(([key]) => key.startsWith("expand")).map(([, value]) => value)).toEqual(
      ["items.data.price.product"],
    );
    // The same event delivered again changes nothing.
    expect(await handleBillingWebhook(t.platform.services, completed)).toEqual({
      applied: false,
      note: "duplicate",
    });

    const billing = await t.call(owner.caller, BillingService.method.getBilling, ws);
    expect(billing).toMatchObject({
      billingEnabled: true,
      customerId: "cus_1",
      productId: "prod_team",
      productName: "Team",
      status: "active",
      cancelAtPeriodEnd: false,
      metadata: { workspace_id: owner.workspaceId },
    });
    expect(timestampDate(billing.currentPeriodEnd!).getTime()).toBe(periodEnd * 1000);
    expect(
      (
        await expectCode(
          t.call(owner.caller, BillingService.method.createCheckout, ws),
          "failed_precondition",
        )
      ).reason,
    ).toBe("ALREADY_SUBSCRIBED");

    const portal = await t.call(owner.caller, BillingService.method.createPortal, ws);
    expect(portal.url).toMatch(/^https:\/\/billing\.stripe\.test\//);
    const portalCall = stripe.requests.findLast((r) => r.path === "/v1/billing_portal/sessions")!;
    expect(Object.fromEntries(portalCall.form)).toEqual({
      customer: "cus_1",
      return_url: `http://localhost:8080/workspaces/${owner.workspaceId}/billing`,
    });

    t.clock.advance(60_000);
    await t.call(owner.caller, BillingService.method.cancelSubscription, { ...ws, reason: "too expensive" });
    const cancelCall = stripe.requests.findLast((r) => r.path === "/v1/subscriptions/sub_1")!;
    expect(cancelCall.method).toBe("POST");
    expect(cancelCall.form.get("cancel_at_period_end")).toBe("true");
    expect(cancelCall.form.get("cancellation_details[comment]")).toBe("too expensive");
    expect((await t.call(owner.caller, BillingService.method.getBilling, ws)).cancelAtPeriodEnd).toBe(true);

    // A webhook produced before the cancellation arrives late: it must not undo it.
    stripe.subscriptions.get("sub_1")!.cancel_at_period_end = false;
    const stale = delivery({
      id: `evt_${++eventCounter}`,
      type: "customer.subscription.updated",
      created: Math.floor(t.clock.now().getTime() / 1000) - 30,
      data: { object: { id: "sub_1", object: "subscription", metadata: {} } },
    });
    expect(await handleBillingWebhook(t.platform.services, stale)).toMatchObject({
      applied: false,
      note: "stale",
    });
    expect((await t.call(owner.caller, BillingService.method.getBilling, ws)).cancelAtPeriodEnd).toBe(true);

    await t.call(owner.caller, BillingService.method.cancelSubscription, { ...ws, immediate: true });
    expect(stripe.requests.findLast((r) => r.path === "/v1/subscriptions/sub_1")!.method).toBe("DELETE");
    expect((await t.call(owner.caller, BillingService.method.getBilling, ws)).status).toBe("canceled");
    await expectCode(
      t.call(owner.caller, BillingService.method.cancelSubscription, ws),
      "failed_precondition",
    );

    const { logs } = await t.call(owner.caller, UtilService.method.listAuditLogs, {
      ...ws,
      search: "billing.",
    });
    expect(logs.map((l) => `${l.actorType}:${l.action}`)).toEqual([
      "user:billing.subscription.cancel",
      "user:billing.subscription.cancel_at_period_end",
      "user:billing.portal.create",
      "billing_provider:billing.subscription.update",
      "user:billing.checkout.create",
      "user:billing.checkout.create",
    ]);
  });

  it("refuses webhooks with a bad signature, another secret, a changed body or an old timestamp", async () => {
    const owner = await t.owner();
    const good = checkoutCompleted(owner.workspaceId, "sub_x", "cus_x");
    const refused = async (d: { body: string; signature: string }) =>
      expect(handleBillingWebhook(t.platform.services, d)).rejects.toBeInstanceOf(BillingWebhookError);
    await refused({ body: good.body, signature: "t=1,v1=deadbeef" });
    await refused({ body: good.body, signature: "" });
    await refused(
      delivery({ id: "evt_other", type: "invoice.paid", data: { object: {} } }, { secret: "whsec_wrong" }),
    );
    await refused({ body: good.body.replace("sub_x", "sub_y"), signature: good.signature });
    const old = Math.floor(t.clock.now().getTime() / 1000) - 3600;
    await refused(
      delivery(
        { id: "evt_old", type: "checkout.session.completed", data: { object: {} } },
        { timestamp: old },
      ),
    );
    expect(await t.storage.billingAccounts.find(owner.workspaceId)).toBeNull();
  });

  it("ignores events it does not act on and customers it does not know", async () => {
    const ignored = delivery({
      id: `evt_${++eventCounter}`,
      type: "invoice.paid",
      data: { object: { id: "in_1" } },
    });
    expect(await handleBillingWebhook(t.platform.services, ignored)).toEqual({
      applied: false,
      note: "ignored",
    });
    stripe.subscriptions.set("sub_orphan", {
      id: "sub_orphan",
      customer: "cus_orphan",
      status: "active",
      cancel_at_period_end: false,
      current_period_end: 0,
      metadata: {},
      product: { id: "prod_x", name: "X" },
    });
    const orphan = delivery({
      id: `evt_${++eventCounter}`,
      type: "customer.subscription.updated",
      data: { object: { id: "sub_orphan", object: "subscription", metadata: {} } },
    });
    expect(await handleBillingWebhook(t.platform.services, orphan)).toEqual({
      applied: false,
      note: "unknown_customer",
    });
  });

  it("a Stripe outage answers unavailable; the portal needs a billing account first", async () => {
    const owner = await t.owner();
    const ws = { workspaceId: owner.workspaceId };
    expect(
      (await expectCode(t.call(owner.caller, BillingService.method.createPortal, ws), "failed_precondition"))
        .reason,
    ).toBe("NO_BILLING_ACCOUNT");
    stripe.failWith = 500;
    try {
      const error = await expectCode(
        t.call(owner.caller, BillingService.method.createCheckout, ws),
        "unavailable",
      );
      expect(error.reason).toBe("BILLING_PROVIDER_FAILED");
    } finally {
      stripe.failWith = undefined;
    }
    expect(await t.storage.billingAccounts.find(owner.workspaceId)).toBeNull();
  });
});

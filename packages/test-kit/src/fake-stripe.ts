/**
 * A local HTTP server answering the Stripe API calls the billing provider makes (customers,
 * checkout and portal sessions, subscription retrieve, update and cancel), with Stripe's object
 * shapes. It records every request so tests can check what was sent.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly form: URLSearchParams;
  readonly headers: IncomingMessage["headers"];
}

export interface FakeSubscription {
  id: string;
  customer: string;
  status: string;
  cancel_at_period_end: boolean;
  current_period_end: number;
  metadata: Record<string, string>;
  product: { id: string; name: string };
}

export interface FakeStripe {
  readonly port: number;
  readonly requests: RecordedRequest[];
  readonly subscriptions: Map<string, FakeSubscription>;
  /** When set, every API call answers this HTTP status (a Stripe outage). */
  failWith: number | undefined;
  close(): Promise<void>;
}

function subscriptionObject(s: FakeSubscription) {
  return {
    id: s.id,
    object: "subscription",
    customer: s.customer,
    status: s.status,
    cancel_at_period_end: s.cancel_at_period_end,
    metadata: s.metadata,
    items: {
      object: "list",
      data: [
        {
          id: `si_${s.id}`,
          object: "subscription_item",
          current_period_end: s.current_period_end,
          price: {
            id: "price_team",
            object: "price",
            product: { id: s.product.id, object: "product", name: s.product.name },
          },
        },
      ],
    },
  };
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const requests: RecordedRequest[] = [];
  const subscriptions = new Map<string, FakeSubscription>();
  let customers = 0;
  const state = { failWith: undefined as number | undefined };

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "http://stripe.local");
    const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
    requests.push({
      method: req.method ?? "",
      path: url.pathname,
      query: url.searchParams,
      form,
      headers: req.headers,
    });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_${requests.length}` });
      res.end(JSON.stringify(body));
    };
    if (state.failWith !== undefined) {
      send(state.failWith, { error: { type: "api_error", message: "Stripe is having a bad day" } });
      return;
    }
    const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname);
    if (req.method === "POST" && url.pathname === "/v1/customers") {
      send(200, { id: `cus_${++customers}`, object: "customer", email: form.get("email") });
    } else if (req.method === "POST" && url.pathname === "/v1/checkout/sessions") {
      send(200, {
        id: `cs_${requests.length}`,
        object: "checkout.session",
        url: `https://checkout.stripe.test/c/${requests.length}`,
      });
    } else if (req.method === "POST" && url.pathname === "/v1/billing_portal/sessions") {
      send(200, {
        id: `bps_${requests.length}`,
        object: "billing_portal.session",
        url: `https://billing.stripe.test/p/${requests.length}`,
      });
    } else if (subscription) {
      const found = subscriptions.get(subscription[1]!);
      if (!found) {
        send(404, { error: { type: "invalid_request_error", message: "No such subscription" } });
        return;
      }
      if (req.method === "POST" && form.get("cancel_at_period_end") === "true")
        found.cancel_at_period_end = true;
      if (req.method === "DELETE") found.status = "canceled";
      send(200, subscriptionObject(found));
    } else {
      send(404, {
        error: {
          type: "invalid_request_error",
          message: `Unrecognized request URL (${req.method} ${url.pathname})`,
        },
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    subscriptions,
    get failWith() {
      return state.failWith;
    },
    set failWith(value) {
      state.failWith = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

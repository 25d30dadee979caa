/**
 * Rate limits under load: far more concurrent requests than the budget, multiplexed over several
 * HTTP/2 connections, fired at once. Exactly the budget is let through, whatever the interleaving,
 * and every answer's `X-RateLimit-*` headers agree with one counter. First one server (the
 * in-memory counters of the embedded setup), then two `wap-server` processes over one PostgreSQL
 * schema, which share the counters in the database.
 *
 * No timing is asserted: the window (10 minutes) is far longer than any burst, so every request
 * of a burst falls in the same window and the answers can simply be counted.
 */
import { connect } from "node:http2";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { signUp } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "./support/server-process.js";

const userBudget = 50;
const anonymousBudget = 20;
const windowSeconds = 600;

// ---------------------------------------------------------------------------------------------
// Raw HTTP/2: every answer's status, headers and body, with nothing in between

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: Connect JSON bodies.
  readonly body: any;
}

interface Call {
  /** Connect procedure, e.g. `platform.v1.WorkspaceService/ListWorkspaces`. */
  readonly procedure: string;
  readonly headers?: Record<string, string>;
  /** Index of the server in `urls` to send it to; by default they take turns. */
  readonly to?: number;
}

/**
 * Fires every call at once: `calls[i]` goes to `urls[calls[i].to ?? i % urls.length]` over one of
 * `connectionsPerUrl` HTTP/2 connections to it (round robin), all streams opened before any answer
 * is read. Resolves to the answers in call order.
 */
async function fireAtOnce(urls: readonly string[], connectionsPerUrl: number, calls: readonly Call[]) {
  const sessions = urls.map((url) => Array.from({ length: connectionsPerUrl }, () => connect(url)));
  try {
    await Promise.all(
      sessions.flat().map(
        (session) =>
          new Promise((resolve, reject) => {
            session.once("connect", resolve);
            session.once("error", reject);
          }),
      ),
    );
    const sent = urls.map(() => 0);
    return await Promise.all(
      calls.map((call, i) => {
        const to = call.to ?? i % urls.length;
        const session = sessions[to]![sent[to]!++ % connectionsPerUrl]!;
        return new Promise<Answer>((resolve, reject) => {
          const stream = session.request({
            ":method": "POST",
            ":path": `/${call.procedure}`,
            "content-type": "application/json",
            ...call.headers,
          });
          let status = 0;
          let headers: Record<string, string> = {};
          let text = "";
          stream.on("response", (h) => {
            status = Number(h[":status"]);
            headers = Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));
          });
          stream.setEncoding("utf8");
          stream.on("data", (chunk: string) => {
            text += chunk;
          });
          stream.on("end", () =>
            resolve({ status, headers, body: text === "" ? undefined : JSON.parse(text) }),
          );
          stream.on("error", reject);
          stream.end("{}");
        });
      }),
    );
  } finally {
    for (const session of sessions.flat()) session.close();
  }
}

/** The answers by outcome, with the checks every answer of one counter must pass. */
function tally(answers: readonly Answer[], budget: number) {
  const allowed = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 429);
  // Nothing else: no 500, no 503 from a counter that could not keep up.
  expect(
    allowed.length + refused.length,
    JSON.stringify(answers.find((a) => a.status !== 200 && a.status !== 429)),
  ).toBe(answers.length);
  for (const answer of answers) expect(answer.headers["x-ratelimit-limit"]).toBe(String(budget));
  // One counter: each allowed request took its own point, so "remaining" counts down without a gap.
  expect(allowed.map((a) => Number(a.headers["x-ratelimit-remaining"])).sort((x, y) => x - y)).toEqual(
    Array.from({ length: allowed.length }, (_, i) => i),
  );
  for (const answer of allowed) expect(answer.headers["retry-after"]).toBeUndefined();
  for (const answer of refused) {
    expect(answer.body).toMatchObject({
      code: "resource_exhausted",
      message: expect.stringContaining(`${budget} requests per window`),
    });
    expect(answer.headers["x-ratelimit-remaining"]).toBe("0");
    const retryAfter = Number(answer.headers["retry-after"]);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= windowSeconds).toBe(true);
  }
  // One window: every answer names the same end of it (to the second it was rounded up to).
  const resets = answers.map((a) => Number(a.headers["x-ratelimit-reset"]));
  expect(Math.max(...resets) - Math.min(...resets)).toBeLessThanOrEqual(1);
  return { allowed: allowed.length, refused: refused.length };
}

const listWorkspaces = (token: string): Call => ({
  procedure: "platform.v1.WorkspaceService/ListWorkspaces",
  headers: { authorization: `Bearer ${token}` },
});
/** A public call that changes nothing: answered `{}` for a request without an email. */
const anonymousCall = (forwardedFor?: string): Call => ({
  procedure: "platform.v1.AuthService/ResendVerification",
  ...(forwardedFor !== undefined && { headers: { "x-forwarded-for": forwardedFor } }),
});

/** `perAddress` calls from each address, interleaved. */
function fromAddresses(addresses: readonly string[], perAddress: number): { calls: Call[]; of: string[] } {
  const calls: Call[] = [];
  const of: string[] = [];
  for (let i = 0; i < perAddress; i++) {
    for (const address of addresses) {
      calls.push(anonymousCall(address));
      of.push(address);
    }
  }
  return { calls, of };
}

const measured: Record<string, unknown> = {};
afterAll(() => console.info("rate-limit-load", JSON.stringify(measured)));

// ---------------------------------------------------------------------------------------------

describe("one server (in-memory counters)", () => {
  let server: TestServer;
  let untrusting: TestServer;
  beforeAll(async () => {
    const rateLimit = { authenticatedPoints: userBudget, anonymousPoints: anonymousBudget, windowSeconds };
    // Behind one proxy: X-Forwarded-For names the client.
    server = await startTestServer({ rateLimit, trustProxyHops: 1 });
    untrusting = await startTestServer({ rateLimit });
  });
  afterAll(async () => {
    await server?.close();
    await untrusting?.close();
  });

  it("lets exactly the budget of one user through out of 200 concurrent requests on 4 connections", async () => {
    const user = await signUp(server.url, "burst");
    const answers = await fireAtOnce([server.url], 4, Array(200).fill(listWorkspaces(user.accessToken)));
    expect(tally(answers, userBudget)).toEqual({ allowed: userBudget, refused: 200 - userBudget });
    measured.oneServerUser = { requests: 200, allowed: userBudget };
  });

  it("counts each user apart: another user's budget is untouched by the first one's burst", async () => {
    const [first, second] = [await signUp(server.url, "first"), await signUp(server.url, "second")];
    const calls = Array.from({ length: 160 }, (_, i) =>
      listWorkspaces((i % 2 === 0 ? first : second).accessToken),
    );
    const answers = await fireAtOnce([server.url], 3, calls);
    const firsts = answers.filter((_, i) => i % 2 === 0);
    const seconds = answers.filter((_, i) => i % 2 === 1);
    expect(tally(firsts, userBudget)).toEqual({ allowed: userBudget, refused: 80 - userBudget });
    expect(tally(seconds, userBudget)).toEqual({ allowed: userBudget, refused: 80 - userBudget });
  });

  it("limits anonymous callers per address: exactly the budget for each of three addresses", async () => {
    const addresses = ["198.51.100.1", "198.51.100.2", "203.0.113.9"];
    const { calls, of } = fromAddresses(addresses, 60);
    const answers = await fireAtOnce([server.url], 4, calls);
    for (const address of addresses) {
      const mine = answers.filter((_, i) => of[i] === address);
      expect(tally(mine, anonymousBudget), address).toEqual({
        allowed: anonymousBudget,
        refused: 60 - anonymousBudget,
      });
    }
    measured.oneServerAnonymous = {
      addresses: addresses.length,
      requestsEach: 60,
      allowedEach: anonymousBudget,
    };
  });

  it("counts an IPv6 client by its /64: two addresses of one network share one budget", async () => {
    const { calls } = fromAddresses(["2001:db8:1:2::a", "2001:db8:1:2:ffff::b"], 30);
    const answers = await fireAtOnce([server.url], 2, calls);
    expect(tally(answers, anonymousBudget)).toEqual({
      allowed: anonymousBudget,
      refused: 60 - anonymousBudget,
    });
  });

  it("without a trusted proxy, a forged X-Forwarded-For buys no fresh budget", async () => {
    const calls = Array.from({ length: 80 }, (_, i) => anonymousCall(`192.0.2.${i + 1}`));
    const answers = await fireAtOnce([untrusting.url], 4, calls);
    // All of them come from 127.0.0.1, whatever they claim.
    expect(tally(answers, anonymousBudget)).toEqual({
      allowed: anonymousBudget,
      refused: 80 - anonymousBudget,
    });
  });
});

describe("two wap-server processes over one PostgreSQL (shared counters)", () => {
  let pg: TestPostgres;
  let instances: ServerProcess[] = [];
  beforeAll(async () => {
    pg = await startTestPostgres();
    const env = {
      WAP_DATABASE_URL: await pg.freshSchema(),
      WAP_MASTER_KEY: formatMasterKey(generateMasterKey()),
      WAP_HOST: "127.0.0.1",
      WAP_RATE_LIMIT: String(userBudget),
      WAP_RATE_LIMIT_ANONYMOUS: String(anonymousBudget),
      WAP_RATE_LIMIT_WINDOW: String(windowSeconds),
      WAP_TRUST_PROXY: "1",
      WAP_DATABASE_POOL_SIZE: "4",
      WAP_LOG_LEVEL: "info",
    };
    // Started together: both race to create the counters' table.
    instances = await Promise.all(
      ["instance A", "instance B"].map(async (name) =>
        startServerProcess({ ...env, WAP_PORT: String(await freePort()) }, name),
      ),
    );
  }, 120_000);
  afterAll(async () => {
    const codes = await Promise.all(instances.map((instance) => instance.stop()));
    await pg?.stop();
    expect(codes).toEqual(instances.map(() => 0));
    // No request was let through because the shared store failed, nor refused for it.
    for (const instance of instances)
      expect(instance.output()).not.toMatch(/rate limiter store failed|"level":"error"/);
    instances = [];
  }, 60_000);

  it("lets exactly the budget of one user through out of 200 concurrent requests split over both", async () => {
    const urls = instances.map((instance) => instance.url);
    const user = await signUp(urls[0]!, "shared");
    // 100 on each instance, over two connections to each.
    const answers = await fireAtOnce(urls, 2, Array(200).fill(listWorkspaces(user.accessToken)));
    expect(tally(answers, userBudget)).toEqual({ allowed: userBudget, refused: 200 - userBudget });
    // Both instances let some through and refused some: the budget was spent across them.
    const onA = answers.filter((_, i) => i % 2 === 0);
    const onB = answers.filter((_, i) => i % 2 === 1);
    const allowedOn = (list: Answer[]) => list.filter((a) => a.status === 200).length;
    measured.twoInstancesUser = { requests: 200, allowedOnA: allowedOn(onA), allowedOnB: allowedOn(onB) };
  });

  it("limits anonymous callers per address across both instances", async () => {
    const urls = instances.map((instance) => instance.url);
    const addresses = ["198.51.100.7", "203.0.113.70"];
    const { calls, of } = fromAddresses(addresses, 60);
    // Each address's calls take turns between A and B.
    const split = calls.map((call, i) => ({ ...call, to: Math.floor(i / addresses.length) % 2 }));
    const answers = await fireAtOnce(urls, 2, split);
    for (const address of addresses) {
      const mine = answers.filter((_, i) => of[i] === address);
      expect(tally(mine, anonymousBudget), address).toEqual({
        allowed: anonymousBudget,
        refused: 60 - anonymousBudget,
      });
    }
  });
});

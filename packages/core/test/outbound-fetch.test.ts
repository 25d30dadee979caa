/**
 * The outbound fetch: bounded decoded bodies (gzip bombs included), timeouts, public addresses
 * only (by the address connected to), and failures remembered for a while.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboundFetch, isAllowedAddress, OutboundFetchError, parseNetworks } from "../src/internal.js";
import { createFailureMemory } from "../src/lib/outbound-fetch.js";

const loopback = ["127.0.0.0/8"];
let server: http.Server;
let base: string;
const hits = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === "/bomb") {
      // 16 MiB of zeros in about 16 KiB of gzip.
      const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024));
      res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
      res.end(bomb);
    } else if (path.startsWith("/size/")) {
      const size = Number(path.slice("/size/".length));
      // Chunked: no Content-Length to refuse it by.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.end(Buffer.alloc(size, 0x61));
    } else if (path === "/trickle") {
      res.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 50);
      res.once("close", () => clearInterval(timer));
    } else if (path === "/moved") {
      res.writeHead(302, { location: "/elsewhere" });
      res.end();
    } else if (path === "/echo") {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            method: req.method,
            type: req.headers["content-type"],
            body: Buffer.concat(chunks).toString(),
          }),
        );
      });
    } else if (path === "/broken") {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end("down");
    } else {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, path }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function failureOf(promise: Promise<unknown>): Promise<OutboundFetchError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutboundFetchError);
  return error as OutboundFetchError;
}

describe("bounded bodies", () => {
  it("stops a gzip bomb at the cap of decoded bytes", async () => {
    const fetch = createOutboundFetch({ allowNetworks: loopback, maxResponseBytes: 1024 * 1024 });
    const error = await failureOf(fetch(`${base}/bomb`));
    expect(error.reason).toBe("RESPONSE_TOO_LARGE");
    expect(error.message).toMatch(/larger than 1048576 bytes/);
  });

  it("accepts a body up to the cap and refuses one beyond it, without Content-Length", async () => {
    const cap = 4096;
    const fetch = createOutboundFetch({ allowNetworks: loopback, maxResponseBytes: cap, failureCacheMs: 0 });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 * cap }), async (size) => {
        const outcome = await fetch(`${base}/size/${size}`).then(
          async (r) => (await r.arrayBuffer()).byteLength,
          (e: unknown) => e,
        );
        if (size <= cap) expect(outcome).toBe(size);
        else expect((outcome as OutboundFetchError).reason).toBe("RESPONSE_TOO_LARGE");
      }),
      { numRuns: 25 },
    );
  });

  it("gives up on a body that never ends at the total timeout", async () => {
    const fetch = createOutboundFetch({ allowNetworks: loopback, totalTimeoutMs: 300 });
    const error = await failureOf(fetch(`${base}/trickle`));
    expect(error.reason).toBe("TIMEOUT");
  });
});

describe("requests and redirects", () => {
  it("sends a form body and reads the answer, on a connection reused for the next request", async () => {
    const fetch = createOutboundFetch({ allowNetworks: loopback });
    for (const code of ["first", "second"]) {
      const answer = await fetch(`${base}/echo`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code }),
      });
      expect(answer.status).toBe(200);
      expect(answer.url).toBe(`${base}/echo`);
      expect(await answer.json()).toEqual({
        method: "POST",
        type: "application/x-www-form-urlencoded",
        body: `grant_type=authorization_code&code=${code}`,
      });
    }
  });

  it("never follows a redirect: the 3xx is the answer, or a failure when redirects are an error", async () => {
    const fetch = createOutboundFetch({ allowNetworks: loopback, failureCacheMs: 0 });
    const before = hits.get("/elsewhere") ?? 0;
    const answer = await fetch(`${base}/moved`);
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("/elsewhere");
    const error = await failureOf(fetch(`${base}/moved`, { redirect: "error" }));
    expect(error.message).toMatch(/redirects \(HTTP 302\); redirects are not followed/);
    expect(hits.get("/elsewhere") ?? 0).toBe(before);
  });
});

describe("addresses", () => {
  it("refuses loopback unless its network is allowed, before any request is sent", async () => {
    const before = hits.get("/refused") ?? 0;
    const error = await failureOf(createOutboundFetch()(`${base}/refused`));
    expect(error.reason).toBe("ADDRESS_NOT_ALLOWED");
    expect(error.message).toMatch(/127\.0\.0\.1.*not a public address.*WAP_OUTBOUND_ALLOW_NETWORKS/);
    expect(hits.get("/refused") ?? 0).toBe(before);
    const allowed = await createOutboundFetch({ allowNetworks: loopback })(`${base}/refused`);
    expect(allowed.status).toBe(200);
  });

  it("checks the addresses a name resolves to, which are the ones connected to (no rebinding)", async () => {
    const port = (server.address() as AddressInfo).port;
    let lookups = 0;
    const fetch = createOutboundFetch({
      failureCacheMs: 0,
      // First answer public (as a check-then-connect would see it), then loopback.
      lookup: async () => {
        lookups++;
        return lookups === 1
          ? [
              { address: "93.184.215.14", family: 4 },
              { address: "127.0.0.1", family: 4 },
            ]
          : [{ address: "127.0.0.1", family: 4 }];
      },
    });
    const before = hits.get("/rebind") ?? 0;
    for (let i = 0; i < 2; i++) {
      const error = await failureOf(fetch(`http://idp.example:${port}/rebind`));
      expect(error.reason).toBe("ADDRESS_NOT_ALLOWED");
    }
    expect(hits.get("/rebind") ?? 0).toBe(before);
  });

  it("refuses every non-public range, IPv4-mapped IPv6 too, and allows what the operator names", () => {
    const none = parseNetworks([]);
    for (const address of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "::",
      "fe80::1",
      "fd12:3456::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
    ]) {
      expect(isAllowedAddress(address, none), address).toBe(false);
    }
    expect(isAllowedAddress("93.184.215.14", none)).toBe(true);
    expect(isAllowedAddress("2606:4700::1111", none)).toBe(true);
    const office = parseNetworks(["10.0.0.0/8", "fd00::/8"]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (b, c) => {
        expect(isAllowedAddress(`10.${b}.${c}.1`, none)).toBe(false);
        expect(isAllowedAddress(`10.${b}.${c}.1`, office)).toBe(true);
        expect(isAllowedAddress(`192.168.${b}.${c}`, office)).toBe(false);
      }),
    );
    expect(() => parseNetworks(["10.0.0.0/33"])).toThrow(/not a network/);
    expect(() => parseNetworks(["example.com"])).toThrow(/not a network/);
  });
});

describe("remembered failures", () => {
  it("recalls a failure for exactly its time, then forgets it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60_000 }), fc.integer({ min: 0, max: 120_000 }), (ms, later) => {
        let clock = 1_000_000;
        const memory = createFailureMemory<string>(ms, () => clock);
        memory.remember("k", "failed");
        clock += later;
        expect(memory.recall("k")).toBe(later < ms ? "failed" : undefined);
        expect(memory.recall("other")).toBeUndefined();
      }),
    );
  });

  it("answers a failed GET from memory for a while, then asks again", async () => {
    let clock = 0;
    const fetch = createOutboundFetch({ allowNetworks: loopback, failureCacheMs: 30_000, now: () => clock });
    const before = hits.get("/broken") ?? 0;
    for (let i = 0; i < 5; i++) {
      const answer = await fetch(`${base}/broken`);
      expect(answer.status).toBe(500);
      expect(await answer.text()).toBe("down");
    }
    expect(hits.get("/broken")).toBe(before + 1);
    clock += 30_001;
    await fetch(`${base}/broken`);
    expect(hits.get("/broken")).toBe(before + 2);

    const refused = createOutboundFetch({ failureCacheMs: 30_000, now: () => clock });
    const first = await failureOf(refused(`${base}/x`));
    const second = await failureOf(refused(`${base}/x`));
    expect(second).toBe(first);
  });
});

import { generateKeyPairSync } from "node:crypto";
import { createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { type ConnectRouter, createClient, createRouterTransport } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { DaemonControlService, DaemonService, UserService } from "@wap/api";
import { challengeSignatureValid, parsePlatformChallenge } from "@wap/core/internal";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { createDaemonClient } from "./signed-requests.js";
import { createPlatformSigner } from "./signed-transport.js";

const daemonId = "0b7c6a52-3f1e-4d2a-9c5b-8e1f2a3b4c5d";

function aKeyPair() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, pem: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

/** What the server sees of a `Platform` Authorization header, checked as the server checks it. */
function verified(authorization: string | null, publicKeyPem: string) {
  const match = /^Platform (.*)$/.exec(authorization ?? "");
  const challenge = match ? parsePlatformChallenge(match[1]!) : null;
  if (challenge === null) throw new Error(`not a Platform challenge: ${authorization}`);
  return { ...challenge, valid: challengeSignatureValid(challenge, publicKeyPem) };
}

describe("createPlatformSigner", () => {
  it("signs each call for its own procedure, at the signer's time, with a nonce never reused", async () => {
    const key = aKeyPair();
    const at = new Date("2026-08-12T07:17:00Z");
    const signer = createPlatformSigner({ id: daemonId, privateKey: key.privateKey, now: () => at });
    const seen: Array<{ header: string | null; path: string }> = [];
    const transport = createRouterTransport(
      ({ service }) => {
        service(UserService, {
          whoami(_req, ctx) {
            seen.push({ header: ctx.requestHeader.get("Authorization"), path: new URL(ctx.url).pathname });
            return {};
          },
        });
        service(DaemonService, {
          syncDaemon(_req, ctx) {
            seen.push({ header: ctx.requestHeader.get("Authorization"), path: new URL(ctx.url).pathname });
            return {};
          },
        });
      },
      { transport: { interceptors: [signer.interceptor] } },
    );
    await createClient(UserService, transport).whoami({});
    await createClient(UserService, transport).whoami({});
    await createClient(DaemonService, transport).syncDaemon({});

    const challenges = seen.map(({ header, path }) => ({ ...verified(header, key.pem), path }));
    for (const challenge of challenges) {
      expect(challenge.valid).toBe(true);
      expect(challenge.id).toBe(daemonId);
      expect(challenge.timestamp).toBe(at.getTime() / 1000);
      expect(challenge.procedure).toBe(challenge.path);
    }
    expect(challenges.map((c) => c.procedure)).toEqual([
      "/platform.v1.UserService/Whoami",
      "/platform.v1.UserService/Whoami",
      "/platform.v1.DaemonService/SyncDaemon",
    ]);
    expect(new Set(challenges.map((c) => c.nonce)).size).toBe(3);
  });

  it("produces challenges the server parses and verifies, for any id, procedure and time", () => {
    const key = aKeyPair();
    const other = aKeyPair();
    const name = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,30}$/);
    fc.assert(
      fc.property(
        fc.uuid(),
        name,
        name,
        fc.date({ min: new Date(0), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }),
        (id, service, method, at) => {
          const procedure = `/platform.v1.${service}/${method}`;
          const signer = createPlatformSigner({ id, privateKey: key.privateKey, now: () => at });
          const challenge = verified(signer.authorization(procedure), key.pem);
          expect(challenge.valid).toBe(true);
          expect(challenge.id).toBe(id.toLowerCase());
          expect(challenge.procedure).toBe(procedure);
          expect(challenge.timestamp).toBe(Math.floor(at.getTime() / 1000));
          expect(challenge.nonce).toMatch(/^[0-9a-f]{24}$/);
          // Another key's public half does not verify it.
          expect(challengeSignatureValid(challenge, other.pem)).toBe(false);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("accepts a PKCS#8 PEM key and refuses keys that are not P-256", () => {
    const key = aKeyPair();
    const pem = key.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const signer = createPlatformSigner({ id: daemonId, privateKey: pem });
    expect(verified(signer.authorization("/platform.v1.UserService/Whoami"), key.pem).valid).toBe(true);
    const ed25519 = generateKeyPairSync("ed25519").privateKey;
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey;
    expect(() => createPlatformSigner({ id: daemonId, privateKey: ed25519 })).toThrow(/P-256/);
    expect(() => createPlatformSigner({ id: daemonId, privateKey: p384 })).toThrow(/P-256/);
  });
});

describe("createDaemonClient", () => {
  let server: Http2Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  });

  /** A real h2c server; `routes` sees what arrived. */
  async function listen(routes: (router: ConnectRouter) => void): Promise<string> {
    server = createServer(connectNodeAdapter({ routes }));
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it("calls over HTTP/2 with binary Connect, the daemon headers and a signature, on unary calls and streams", async () => {
    const key = aKeyPair();
    const arrived: Array<{ procedure: string; headers: Headers }> = [];
    const baseUrl = await listen((router) => {
      router.service(DaemonService, {
        syncDaemon(_req, ctx) {
          arrived.push({ procedure: new URL(ctx.url).pathname, headers: ctx.requestHeader });
          return { principals: [{ username: "ubuntu", ids: [daemonId] }] };
        },
      });
      router.service(DaemonControlService, {
        async *connect(requests, ctx) {
          arrived.push({ procedure: new URL(ctx.url).pathname, headers: ctx.requestHeader });
          yield { msg: { case: "heartbeatAck", value: {} } };
          for await (const _ of requests) yield { msg: { case: "heartbeatAck", value: {} } };
        },
      });
    });
    // The server speaks HTTP/2 only (h2c), so whatever arrives came over HTTP/2.
    const contentTypes: unknown[] = [];
    server!.on("stream", (_stream, headers) => contentTypes.push(headers["content-type"]));
    const client = createDaemonClient({
      baseUrl,
      signer: createPlatformSigner({ id: daemonId, privateKey: key.privateKey }),
      headers: { "Platform-Daemon-Hostname": "web-1", "Platform-Daemon-Version": "0.0.0-simulated" },
    });
    try {
      const res = await client.daemons.syncDaemon({ users: [], privateIps: [], metadata: {} });
      expect(res.principals[0]?.username).toBe("ubuntu");
      const controller = new AbortController();
      async function* heartbeats() {
        yield { msg: { case: "heartbeat" as const, value: {} } };
      }
      let acks = 0;
      for await (const message of client.daemonControl.connect(heartbeats(), { signal: controller.signal })) {
        if (message.msg.case === "heartbeatAck" && ++acks === 2) break;
      }
      controller.abort();
    } finally {
      client.close();
    }
    expect(contentTypes).toEqual(["application/proto", "application/connect+proto"]);
    expect(arrived.map((a) => a.procedure)).toEqual([
      "/platform.v1.DaemonService/SyncDaemon",
      "/platform.v1.DaemonControlService/Connect",
    ]);
    for (const { procedure, headers } of arrived) {
      const challenge = verified(headers.get("Authorization"), key.pem);
      expect(challenge.valid).toBe(true);
      expect(challenge.procedure).toBe(procedure);
      expect(headers.get("Platform-Daemon-Hostname")).toBe("web-1");
      expect(headers.get("Platform-Daemon-Version")).toBe("0.0.0-simulated");
    }
  });

  it("sends no Authorization header without a signer (enrolment)", async () => {
    let authorization: string | null = "unset";
    const baseUrl = await listen((router) => {
      router.service(DaemonService, {
        enrollDaemon(_req, ctx) {
          authorization = ctx.requestHeader.get("Authorization");
          return { id: daemonId };
        },
      });
    });
    const client = createDaemonClient({ baseUrl });
    try {
      expect((await client.daemons.enrollDaemon({ token: "t", caId: "" })).id).toBe(daemonId);
    } finally {
      client.close();
    }
    expect(authorization).toBeNull();
  });
});

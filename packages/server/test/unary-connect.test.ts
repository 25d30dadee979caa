/**
 * Unary Connect calls take one of two paths through the server: the lean one (src/lean/unary-connect.ts)
 * for the usual shape, connect-node's pipeline for everything else. A `Connect-Timeout-Ms` header
 * sends a call to connect-node without changing what it means, so each call here is sent both
 * ways and the answers compared: status, headers and body, for answers and refusals alike.
 */
import http2 from "node:http2";
import { gunzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetWorkspaceRequestSchema, platformServices } from "@wap/api";
import { createArgon2PasswordHasher } from "@wap/core";
import { signUp, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interceptorsCovered, leanUnaryFormat } from "../src/lean/unary-connect.js";
import { connectInterceptors } from "../src/request-handler.js";

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
}

interface Call {
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body: string | Uint8Array;
}

/** A deadline far beyond any call here: it changes the path the call takes, not its meaning. */
const generalPath = { "connect-timeout-ms": "600000" };

/** Headers whose values differ from one call to the next whatever the path. */
const perCall = new Set([
  "date",
  "x-request-id",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "retry-after",
]);

describe("lean and general unary paths answer alike", () => {
  let server: TestServer;
  let session: http2.ClientHttp2Session;
  let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let json: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer({ bodyLimitBytes: 64 * 1024 });
    owner = await signUpWithWorkspace(server.url, "lean");
    session = http2.connect(server.url);
    json = {
      "content-type": "application/json",
      "connect-protocol-version": "1",
      authorization: `Bearer ${owner.accessToken}`,
    };
  });
  afterAll(async () => {
    session?.close();
    await server?.close();
  });

  function send(call: Call, extra: Record<string, string> = {}): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": call.path,
        ...call.headers,
        ...extra,
      });
      const chunks: Buffer[] = [];
      let status = 0;
      let headers: Record<string, string | string[]> = {};
      stream.on("response", (h) => {
        status = Number(h[":status"]);
        headers = Object.fromEntries(
          Object.entries(h).filter(([name]) => !name.startsWith(":")) as [string, string | string[]][],
        );
      });
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status, headers, body: Buffer.concat(chunks) }));
      stream.on("error", reject);
      stream.end(call.body);
    });
  }

  /**
   * Sends `call` both ways; returns the lean answer once both agree. With `fresh`, values made
   * anew by each call (ids, challenges, codes, times) may differ, nothing else.
   */
  async function bothWays(call: Call, fresh = false): Promise<Answer> {
    const lean = await send(call);
    const general = await send(call, generalPath);
    const text = (answer: Answer) => {
      const body = decoded(answer).toString("latin1");
      return fresh && answer.status === 200 ? withoutFreshValues(body) : body;
    };
    expect(lean.status, call.path).toBe(general.status);
    expect(comparable(lean.headers), call.path).toEqual(comparable(general.headers));
    expect(text(lean), call.path).toBe(text(general));
    return lean;
  }

  const getWorkspace = "/platform.v1.WorkspaceService/GetWorkspace";

  it("answers a JSON call", async () => {
    const answer = await bothWays({
      path: getWorkspace,
      headers: json,
      body: JSON.stringify({ workspaceId: owner.workspaceId }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(answer.body.toString()).workspace.id).toBe(owner.workspaceId);
  });

  it("answers a binary call, and JSON declared with its charset", async () => {
    const binary = await bothWays({
      path: getWorkspace,
      headers: { ...json, "content-type": "application/proto" },
      body: toBinary(
        GetWorkspaceRequestSchema,
        create(GetWorkspaceRequestSchema, { workspaceId: owner.workspaceId }),
      ),
    });
    expect(binary.status).toBe(200);
    expect(binary.headers["content-type"]).toBe("application/proto");
    const charset = await bothWays({
      path: getWorkspace,
      headers: { ...json, "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ workspaceId: owner.workspaceId }),
    });
    expect(charset.status).toBe(200);
  });

  it("compresses a large answer for a client that accepts gzip", async () => {
    for (let i = 0; i < 12; i++) {
      const created = await send({
        path: "/platform.v1.WorkspaceService/CreateWorkspace",
        headers: json,
        body: JSON.stringify({ name: `lean workspace ${i} with a long enough name to fill the answer` }),
      });
      expect(created.status).toBe(200);
    }
    const answer = await bothWays({
      path: "/platform.v1.WorkspaceService/ListWorkspaces",
      headers: { ...json, "accept-encoding": "gzip" },
      body: "{}",
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(decoded(answer).toString()).workspaces.length).toBeGreaterThanOrEqual(13);
  });

  it("refuses invalid arguments with the same details", async () => {
    const answer = await bothWays({
      path: getWorkspace,
      headers: json,
      body: JSON.stringify({ workspaceId: "nope" }),
    });
    expect(answer.status).toBe(400);
    const error = JSON.parse(answer.body.toString());
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toMatch(/workspaceId/);
    expect(error.details.length).toBeGreaterThan(0);
  });

  it("refuses what cannot be decoded as invalid_argument, JSON or binary", async () => {
    for (const call of [
      { path: getWorkspace, headers: json, body: "{not json" },
      {
        path: getWorkspace,
        headers: json,
        body: JSON.stringify({ workspaceId: owner.workspaceId, extra: 1 }),
      },
      { path: getWorkspace, headers: json, body: JSON.stringify({ workspaceId: 12 }) },
      {
        path: getWorkspace,
        headers: { ...json, "content-type": "application/proto" },
        body: new Uint8Array([0x0a, 0x7f]),
      },
      {
        path: getWorkspace,
        headers: { ...json, "content-type": "application/proto" },
        body: new Uint8Array([0xff, 0xff, 0xff]),
      },
    ]) {
      const answer = await bothWays(call);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body.toString()).code).toBe("invalid_argument");
    }
  });

  it("refuses a body over the limit with resource_exhausted, declared or not", async () => {
    const body = JSON.stringify({ workspaceId: "x".repeat(70 * 1024) });
    const declared = await bothWays({
      path: getWorkspace,
      headers: { ...json, "content-length": String(body.length) },
      body,
    });
    expect(declared.status).toBe(429);
    expect(JSON.parse(declared.body.toString())).toMatchObject({
      code: "resource_exhausted",
      message: `message size ${body.length} is larger than configured readMaxBytes ${64 * 1024}`,
    });
    const streamed = await bothWays({ path: getWorkspace, headers: json, body });
    expect(streamed.status).toBe(429);
    expect(JSON.parse(streamed.body.toString()).message).toBe(
      `message size is larger than configured readMaxBytes ${64 * 1024}`,
    );
  });

  it("refuses missing and bad credentials, and other workspaces, alike", async () => {
    const { authorization: _, ...anonymous } = json;
    const cases: [Call, number, string][] = [
      [
        { path: getWorkspace, headers: anonymous, body: JSON.stringify({ workspaceId: owner.workspaceId }) },
        401,
        "unauthenticated",
      ],
      [
        {
          path: getWorkspace,
          headers: { ...json, authorization: "Bearer v4.public.forged" },
          body: JSON.stringify({ workspaceId: owner.workspaceId }),
        },
        401,
        "unauthenticated",
      ],
      [
        {
          path: getWorkspace,
          headers: json,
          body: JSON.stringify({ workspaceId: "0b5b2c4e-6a1f-4c1e-9d7e-3f3b8f1a2c4d" }),
        },
        404,
        "not_found",
      ],
      [
        {
          path: getWorkspace,
          headers: { ...json, "connect-protocol-version": "2" },
          body: JSON.stringify({ workspaceId: owner.workspaceId }),
        },
        400,
        "invalid_argument",
      ],
    ];
    for (const [call, status, code] of cases) {
      const answer = await bothWays(call);
      expect(answer.status).toBe(status);
      expect(JSON.parse(answer.body.toString()).code).toBe(code);
    }
  });

  it("lets a client leave halfway through its request, and serves the next", async () => {
    for (const extra of [{}, generalPath]) {
      const stream = session.request({ ":method": "POST", ":path": getWorkspace, ...json, ...extra });
      stream.write('{"workspaceId":');
      const closed = new Promise((resolve) => stream.once("close", resolve));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await closed;
      expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    }
    const next = await bothWays({
      path: getWorkspace,
      headers: json,
      body: JSON.stringify({ workspaceId: owner.workspaceId }),
    });
    expect(next.status).toBe(200);
  });

  it("sets the session cookie on Login", async () => {
    const login = (extra: Record<string, string> = {}) =>
      send(
        {
          path: "/platform.v1.AuthService/Login",
          headers: { "content-type": "application/json", "connect-protocol-version": "1" },
          body: JSON.stringify({ email: owner.email, password: owner.password }),
        },
        extra,
      );
    const lean = await login();
    const general = await login(generalPath);
    expect(lean.status).toBe(200);
    expect(general.status).toBe(200);
    const attributes = (answer: Answer) =>
      [answer.headers["set-cookie"]].flat().map((c) => String(c).replace(/=[^;]*/, "=<token>"));
    expect(attributes(lean)).toEqual(attributes(general));
    expect(String(lean.headers["set-cookie"])).toMatch(/HttpOnly/i);
  });

  it("answers every unary RPC alike: anonymous, in a workspace the caller is not in, and with an empty request", async () => {
    const stranger = await signUpWithWorkspace(server.url, "stranger");
    const unary = platformServices.flatMap((service) =>
      service.methods.filter((m) => m.methodKind === "unary").map((m) => `/${service.typeName}/${m.name}`),
    );
    expect(unary.length).toBeGreaterThan(90);
    const codes = new Map<string, number>();
    for (const path of unary) {
      // No credentials: refused, or (for the RPCs that need none) refused on the empty request.
      const anonymous = await bothWays(
        {
          path,
          headers: { "content-type": "application/json", "connect-protocol-version": "1" },
          body: "{}",
        },
        true,
      );
      // Another workspace's id: refused before anything is read or changed.
      const elsewhere = await bothWays(
        { path, headers: json, body: JSON.stringify({ workspaceId: stranger.workspaceId }) },
        true,
      );
      for (const answer of [anonymous, elsewhere])
        codes.set(String(answer.status), (codes.get(String(answer.status)) ?? 0) + 1);
    }
    // The walk met answers and refusals of several kinds, not one refusal everywhere.
    expect(codes.size).toBeGreaterThanOrEqual(4);
  });
});

describe("a call in flight when the server shuts down", () => {
  it("is answered unavailable on both paths, once the grace period is over", async () => {
    const real = createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 });
    let slow = false;
    let verifying = 0;
    const server = await startTestServer({
      shutdownGraceSeconds: 0,
      platformOptions: {
        // Sign-in takes a while once the test says so: long enough to be in flight at shutdown.
        passwords: {
          hash: (password) => real.hash(password),
          burn: (password) => real.burn(password),
          verify: async (hash, password) => {
            if (slow) {
              verifying++;
              await new Promise((resolve) => setTimeout(resolve, 3000));
            }
            return real.verify(hash, password);
          },
        },
      },
    });
    const user = await signUp(server.url, "shutdown");
    const session = http2.connect(server.url);
    try {
      slow = true;
      const login = (extra: Record<string, string>) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const stream = session.request({
            ":method": "POST",
            ":path": "/platform.v1.AuthService/Login",
            "content-type": "application/json",
            ...extra,
          });
          let status = 0;
          const chunks: Buffer[] = [];
          stream.on("response", (h) => {
            status = Number(h[":status"]);
          });
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("end", () => resolve({ status, body: Buffer.concat(chunks).toString() }));
          stream.on("error", reject);
          stream.end(JSON.stringify({ email: user.email, password: user.password }));
        });
      const answers = Promise.all([login({}), login(generalPath)]);
      // Both calls are inside the operation: the shutdown finds them in flight.
      await until(() => verifying === 2);
      await server.close();
      const [lean, general] = await answers;
      expect(lean.status).toBe(503);
      expect(JSON.parse(lean.body)).toMatchObject({
        code: "unavailable",
        message: expect.stringMatching(/shutting down/),
      });
      expect(general.status).toBe(lean.status);
      expect(JSON.parse(general.body)).toEqual(JSON.parse(lean.body));
    } finally {
      session.close();
      await server.close();
    }
  });
});

describe("which calls take the lean path", () => {
  const json = { "content-type": "application/json" };

  it("takes POST calls in JSON or binary, without compression or deadline", () => {
    expect(leanUnaryFormat("POST", json)).toEqual({ binary: false });
    expect(leanUnaryFormat("POST", { "content-type": "application/json; charset=utf-8" })).toEqual({
      binary: false,
    });
    expect(leanUnaryFormat("POST", { "content-type": "application/proto" })).toEqual({ binary: true });
    expect(leanUnaryFormat("POST", { ...json, "content-encoding": "identity" })).toEqual({ binary: false });
  });

  it("does itself the work of every interceptor connect-node has", () => {
    for (const interceptor of connectInterceptors) expect(interceptorsCovered).toContain(interceptor);
  });

  it("leaves everything else to connect-node", () => {
    expect(leanUnaryFormat("GET", json)).toBeUndefined();
    expect(leanUnaryFormat("POST", { "content-type": "application/connect+proto" })).toBeUndefined();
    expect(leanUnaryFormat("POST", { "content-type": "application/grpc" })).toBeUndefined();
    expect(leanUnaryFormat("POST", { "content-type": "text/plain" })).toBeUndefined();
    expect(leanUnaryFormat("POST", {})).toBeUndefined();
    expect(leanUnaryFormat("POST", { ...json, "content-encoding": "gzip" })).toBeUndefined();
    expect(leanUnaryFormat("POST", { ...json, "connect-timeout-ms": "1000" })).toBeUndefined();
  });
});

function comparable(headers: Record<string, string | string[]>) {
  return Object.fromEntries(
    Object.entries(headers)
      .filter(([name]) => !perCall.has(name))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/** The text with what each call makes anew (UUIDs, random tokens and codes, times) blanked. */
function withoutFreshValues(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
    .replace(/[A-Za-z0-9_-]{16,}/g, "<fresh>");
}

function decoded(answer: Answer): Buffer {
  return answer.headers["content-encoding"] === "gzip" ? gunzipSync(answer.body) : answer.body;
}

/**
 * The request edge: rate limits, CSRF, the Connect protocol version, deadlines, the session
 * cookie, probes, request ids, routing errors and internal faults.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { DaemonControlService, platformServices, WorkspaceService } from "@wap/api";
import {
  createArgon2PasswordHasher,
  createMasterKeyStore,
  createPlatform,
  generateMasterKey,
  type Platform,
} from "@wap/core";
import { procedureOf } from "@wap/core/internal";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { connectCall, restCall, signUp, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const rateHeaders = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"];

describe("rate limiting", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      rateLimit: { authenticatedPoints: 4, anonymousPoints: 3, windowSeconds: 60 },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it("counts anonymous callers per address, with headers on every answer, then refuses with 429", async () => {
    const first = await restCall(server.url, "GET", "/v1/no-such-path");
    expect(first.status).toBe(404);
    expect(first.headers.get("x-ratelimit-limit")).toBe("3");
    expect(first.headers.get("x-ratelimit-remaining")).toBe("2");
    const reset = Number(first.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);

    const second = await connectCall(server.url, "platform.v1.UserService/Whoami", {});
    expect(second.status).toBe(401);
    expect(second.headers.get("x-ratelimit-remaining")).toBe("1");
    const third = await restCall(server.url, "POST", "/v1/login", { email: "a@b.example", password: "x" });
    expect(third.headers.get("x-ratelimit-remaining")).toBe("0");

    const refusedRest = await restCall(server.url, "POST", "/v1/login", {
      email: "a@b.example",
      password: "x",
    });
    expect(refusedRest.status).toBe(429);
    expect(refusedRest.body.code).toBe(8);
    expect(refusedRest.body.message).toMatch(/rate limit/);
    expect(Number(refusedRest.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    for (const name of rateHeaders) expect(refusedRest.headers.get(name)).not.toBeNull();

    const refusedConnect = await connectCall(server.url, "platform.v1.AuthService/Login", {
      email: "a@b.example",
    });
    expect(refusedConnect.status).toBe(429);
    expect(refusedConnect.body.code).toBe("resource_exhausted");
    expect(refusedConnect.headers.get("retry-after")).not.toBeNull();

    const refusedGrpc = clientFor(WorkspaceService, transportFor("grpc-h2", server.url));
    const error = await refusedGrpc.listWorkspaces({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    // gRPC answers an early error "trailers-only": the headers arrive with the status.
    expect(error?.metadata.get("x-ratelimit-remaining")).toBe("0");
    expect(error?.metadata.get("retry-after")).not.toBeNull();
  });

  it("does not limit /healthz", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${server.url}/healthz`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
  });

  it("counts a signed-in user under their own key, not their address", async () => {
    const limited = await startTestServer({ rateLimit: { authenticatedPoints: 2, anonymousPoints: 100 } });
    try {
      const user = await signUp(limited.url, "counted");
      const call = () => restCall(limited.url, "GET", "/v1/whoami", undefined, { token: user.accessToken });
      const a = await call();
      expect(a.status).toBe(200);
      expect(a.headers.get("x-ratelimit-limit")).toBe("2");
      expect(a.headers.get("x-ratelimit-remaining")).toBe("1");
      expect((await call()).status).toBe(200);
      const refused = await call();
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).not.toBeNull();
      // Anonymous callers from the same address still have their own budget.
      const anonymous = await restCall(limited.url, "GET", "/v1/whoami");
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("x-ratelimit-limit")).toBe("100");
    } finally {
      await limited.close();
    }
  });
});

describe("CSRF protection for the session cookie", () => {
  let server: TestServer;
  let user: Awaited<ReturnType<typeof signUpWithWorkspace>>;
  let cookie = "";
  const allowed = "https://app.example.com";

  beforeAll(async () => {
    server = await startTestServer({ allowedOrigins: [allowed] });
    user = await signUpWithWorkspace(server.url, "csrf");
    cookie = `session=${user.accessToken}`;
  });
  afterAll(async () => {
    await server.close();
  });

  const create = (headers: Record<string, string>, options: { token?: string; rawBody?: string } = {}) =>
    restCall(
      server.url,
      "POST",
      "/v1/workspaces",
      { name: "from a browser" },
      { cookie, headers, ...options },
    );

  it("refuses a cookie-authenticated cross-site POST (REST and Connect)", async () => {
    const rest = await create({ origin: "https://evil.example" });
    expect(rest.status).toBe(403);
    expect(rest.body.code).toBe(7);
    expect(rest.body.message).toMatch(/cross-site/);
    const connect = await connectCall(
      server.url,
      "platform.v1.WorkspaceService/CreateWorkspace",
      { name: "from evil" },
      { cookie, headers: { origin: "https://evil.example" } },
    );
    expect(connect.status).toBe(403);
    expect(connect.body.code).toBe("permission_denied");
    const fetchMetadata = await create({ "sec-fetch-site": "cross-site" });
    expect(fetchMetadata.status).toBe(403);
  });

  it("refuses a cookie-authenticated simple request (form-like content type)", async () => {
    const res = await create(
      { origin: server.url, "content-type": "text/plain" },
      { rawBody: JSON.stringify({ name: "form post" }) },
    );
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/Content-Type/);
  });

  it("allows same-origin and configured origins", async () => {
    expect((await create({ origin: server.url })).status).toBe(200);
    expect((await create({ origin: allowed })).status).toBe(200);
    expect((await create({ "sec-fetch-site": "same-origin" })).status).toBe(200);
    // Non-browser clients send neither Origin nor Sec-Fetch-Site.
    expect((await create({})).status).toBe(200);
  });

  it("lets cookie-authenticated reads through from anywhere", async () => {
    const res = await restCall(server.url, "GET", "/v1/whoami", undefined, {
      cookie,
      headers: { origin: "https://evil.example" },
    });
    expect(res.status).toBe(200);
  });

  it("answers CORS preflights for allowed origins only, and exposes the rate-limit headers to them", async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/v1/workspaces`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        },
      });
    const ok = await preflight(allowed);
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe(allowed);
    expect(ok.headers.get("access-control-allow-credentials")).toBe("true");
    expect(ok.headers.get("access-control-allow-headers")).toMatch(/Connect-Protocol-Version/i);
    const refused = await preflight("https://evil.example");
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();

    const actual = await create({ origin: allowed });
    expect(actual.headers.get("access-control-allow-origin")).toBe(allowed);
    expect(actual.headers.get("access-control-expose-headers")).toMatch(/X-RateLimit-Remaining/);
  });

  it("exempts bearer-authenticated requests", async () => {
    const res = await restCall(
      server.url,
      "POST",
      "/v1/workspaces",
      { name: "from a script" },
      {
        token: user.accessToken,
        headers: { origin: "https://evil.example" },
      },
    );
    expect(res.status).toBe(200);
  });
});

describe("the session cookie", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("is set by Login and RefreshToken, authenticates, and is cleared by Logout (REST)", async () => {
    const user = await signUp(server.url, "cookie");
    const login = await restCall(server.url, "POST", "/v1/login", {
      email: user.email,
      password: user.password,
    });
    // The session cookie first; the refresh cookie next (console.test.ts).
    const setCookie = login.headers.getSetCookie()[0] ?? "";
    expect(setCookie).toMatch(/^session=v4\.public\.[^;]+; Max-Age=900; Path=\/; HttpOnly; SameSite=Lax$/);
    const cookie = setCookie.split(";")[0] ?? "";

    const me = await restCall(server.url, "GET", "/v1/whoami", undefined, { cookie });
    expect(me.body.user.email).toBe(user.email);
    const meConnect = await connectCall(server.url, "platform.v1.UserService/Whoami", {}, { cookie });
    expect(meConnect.body.user.email).toBe(user.email);

    const refreshed = await restCall(
      server.url,
      "POST",
      `/v1/refresh-token?refreshToken=${encodeURIComponent(login.body.refreshToken)}`,
      undefined,
      { headers: { "content-type": "application/json" } },
    );
    expect(refreshed.status).toBe(200);
    expect(refreshed.headers.get("set-cookie")).toContain(`session=${refreshed.body.accessToken};`);

    const logout = await restCall(server.url, "POST", "/v1/logout", undefined, {
      cookie,
      headers: { "content-type": "application/json", origin: server.url },
    });
    expect(logout.status).toBe(200);
    expect(logout.headers.getSetCookie()[0]).toBe("session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax");
    const after = await restCall(server.url, "GET", "/v1/whoami", undefined, { cookie });
    expect(after.status).toBe(401);
    // A dead cookie is cleared so the browser stops sending it...
    expect(after.headers.get("set-cookie")).toContain("Max-Age=0");
    // ...and it does not stand in the way of signing in again.
    const again = await restCall(
      server.url,
      "POST",
      "/v1/login",
      { email: user.email, password: user.password },
      {
        cookie,
      },
    );
    expect(again.status).toBe(200);
    expect(again.headers.get("set-cookie")).toContain(`session=${again.body.accessToken};`);
  });
});

describe("protocol checks, deadlines, routing and faults", () => {
  let server: TestServer;
  let platform: Platform;
  let dataDir: string;
  let aborted = false;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "wap-edge-"));
    const real = await createPlatform({
      storage: await createSqliteStorage({ filename: join(dataDir, "wap.db") }),
      keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
      passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
    });
    // Deterministic stand-ins: one operation that runs until its request is aborted, one that
    // fails the way a broken driver would.
    platform = {
      ...real,
      async invoke(method, ctx, request) {
        if (method.name === "ListWorkspaces") {
          await new Promise((resolve) =>
            ctx.signal.addEventListener("abort", () => {
              aborted = true;
              resolve(undefined);
            }),
          );
        }
        if (method.name === "GetLicense") {
          throw new Error("SQLITE_CORRUPT: database disk image is malformed (/var/lib/wap/secret-path.db)");
        }
        return real.invoke(method, ctx, request);
      },
    };
    server = await startTestServer({ platform });
  });
  afterAll(async () => {
    await server.close();
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("rejects Connect-Protocol-Version other than 1 (Connect and REST)", async () => {
    const connect = await connectCall(
      server.url,
      "platform.v1.UserService/Whoami",
      {},
      {
        headers: { "connect-protocol-version": "2" },
      },
    );
    expect(connect.status).toBe(400);
    expect(connect.body.code).toBe("invalid_argument");
    expect(connect.body.message).toMatch(/Connect-Protocol-Version must be "1"/);
    const rest = await restCall(server.url, "GET", "/v1/whoami", undefined, {
      headers: { "connect-protocol-version": "2" },
    });
    expect(rest.status).toBe(400);
    const ok = await connectCall(
      server.url,
      "platform.v1.UserService/Whoami",
      {},
      {
        headers: { "connect-protocol-version": "1" },
      },
    );
    expect(ok.status).toBe(401);
    // Connect GET names the version in the query string.
    const message = encodeURIComponent(
      JSON.stringify({ workspaceId: "00000000-0000-4000-8000-000000000000" }),
    );
    const get = (version: string) =>
      fetch(
        `${server.url}/platform.v1.WorkspaceService/GetWorkspace?connect=${version}&encoding=json&message=${message}`,
      );
    const v2 = await get("v2");
    expect(v2.status).toBe(400);
    expect(((await v2.json()) as { message: string }).message).toMatch(/must be "v1"/);
    expect((await get("v1")).status).toBe(401);
  });

  it("honours Connect-Timeout-Ms: deadline_exceeded, and the operation's signal is aborted", async () => {
    const user = await signUp(server.url, "deadline");
    aborted = false;
    const connect = await connectCall(
      server.url,
      "platform.v1.WorkspaceService/ListWorkspaces",
      {},
      {
        token: user.accessToken,
        headers: { "connect-timeout-ms": "100" },
      },
    );
    expect(connect.status).toBe(504);
    expect(connect.body.code).toBe("deadline_exceeded");
    expect(aborted).toBe(true);

    aborted = false;
    const rest = await restCall(server.url, "GET", "/v1/workspaces", undefined, {
      token: user.accessToken,
      headers: { "connect-timeout-ms": "100" },
    });
    expect(rest.status).toBe(504);
    expect(rest.body.code).toBe(4);
    expect(aborted).toBe(true);

    const client = clientFor(WorkspaceService, transportFor("grpc-h2", server.url));
    const error = await client.listWorkspaces({}, bearer(user.accessToken, { timeoutMs: 100 })).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.DeadlineExceeded);

    const malformed = await restCall(server.url, "GET", "/v1/whoami", undefined, {
      token: user.accessToken,
      headers: { "connect-timeout-ms": "soon" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toMatch(/Connect-Timeout-Ms/);
  });

  it("answers deadline_exceeded when an RSA-4096 authority cannot be made in time", async () => {
    const user = await signUpWithWorkspace(server.url, "rsa");
    const res = await connectCall(
      server.url,
      "platform.v1.CertificateService/CreateCertificateAuthority",
      { workspaceId: user.workspaceId, name: "slow", keyType: "CERTIFICATE_KEY_TYPE_RSA", keyBits: 4096 },
      { token: user.accessToken, headers: { "connect-timeout-ms": "1" } },
    );
    expect(res.status).toBe(504);
    expect(res.body.code).toBe("deadline_exceeded");
  });

  it("answers internal faults with a request id and no detail, and logs the detail", async () => {
    const res = await connectCall(
      server.url,
      "platform.v1.LicenseService/GetLicense",
      {},
      {
        headers: { "x-request-id": "trace-me-42" },
      },
    );
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      code: "internal",
      message: "internal error (request id trace-me-42)",
      details: expect.any(Array),
    });
    expect(JSON.stringify(res.body)).not.toMatch(/SQLITE|secret-path/);
    const rest = await restCall(server.url, "GET", "/v1/license");
    expect(rest.status).toBe(500);
    expect(rest.body.message).toMatch(/^internal error \(request id [0-9a-f-]{36}\)$/);
    const logged = server.logs.filter((line) => line.includes("SQLITE_CORRUPT"));
    expect(logged.some((line) => line.includes("trace-me-42"))).toBe(true);
  });

  it("echoes a sane X-Request-Id and replaces an insane one", async () => {
    const sane = await fetch(`${server.url}/v1/whoami`, { headers: { "x-request-id": "abc.DEF-123" } });
    expect(sane.headers.get("x-request-id")).toBe("abc.DEF-123");
    const insane = await fetch(`${server.url}/v1/whoami`, {
      headers: { "x-request-id": "no spaces\tor tabs" },
    });
    expect(insane.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers unknown paths with 404 JSON and wrong methods with 405 and Allow", async () => {
    const missing = await restCall(server.url, "GET", "/v1/nowhere");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toMatch(/application\/json/);
    expect(missing.body.code).toBe(5);
    const unknownRpc = await connectCall(server.url, "platform.v1.NoSuchService/Nothing", {});
    expect(unknownRpc.status).toBe(404);
    const wrongMethod = await restCall(server.url, "PUT", "/v1/workspaces");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, POST");
  });

  it("answers unimplemented for RPCs without an operation and for streams", async () => {
    const user = await signUpWithWorkspace(server.url, "streams");
    // Whichever unary RPC has no operation in this build (the list shrinks as operations land).
    const missing = platformServices
      .flatMap((service) => service.methods)
      .find((m) => m.methodKind === "unary" && !server.platform.operations.has(procedureOf(m)));
    if (missing !== undefined) {
      const answer = await connectCall(
        server.url,
        procedureOf(missing).slice(1),
        {},
        { token: user.accessToken },
      );
      expect(answer.status).toBe(501);
      expect(answer.body.code).toBe("unimplemented");
      expect(answer.body.message).toContain(`${missing.parent.name}/${missing.name} is not implemented`);
    }

    // A streaming RPC runs the edge before its handler: the daemon control stream refuses a user
    // (daemon-control.test.ts covers the stream itself).
    const client = clientFor(DaemonControlService, transportFor("connect-json-h2", server.url));
    const stream = client.connect(
      (async function* () {
        // the client sends nothing
      })(),
      bearer(user.accessToken),
    );
    const error = await (async () => {
      for await (const _ of stream) {
        // no message is expected
      }
    })().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.PermissionDenied);
    expect(error?.rawMessage).toMatch(/may not open a daemon control stream/);

    // A bad credential is refused before a stream starts.
    const forged = await restCall(
      server.url,
      "GET",
      `/v1/workspaces/${user.workspaceId}/events:subscribe`,
      undefined,
      {
        token: "forged",
      },
    );
    expect(forged.status).toBe(401);
  });

  it("serves /healthz without the database and /readyz by pinging it", async () => {
    const health = await restCall(server.url, "GET", "/healthz");
    expect(health).toMatchObject({ status: 200, body: { status: "ok" } });
    const ready = await restCall(server.url, "GET", "/readyz");
    expect(ready).toMatchObject({ status: 200, body: { status: "ready" } });
  });
});

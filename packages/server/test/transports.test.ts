/**
 * One port, every transport: Connect JSON and binary over HTTP/2 (h2c) and HTTP/1.1, gRPC,
 * gRPC-Web, REST with fetch, TLS with ALPN, `buf curl`, and a graceful shutdown.
 */
import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import http2 from "node:http2";
import https from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService, UserService, WorkspaceService } from "@wap/api";
import { bearer, clientFor, protocols, transportFor } from "@wap/test-kit/clients";
import { restCall, signUp } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../src/index.js";
import { selfSignedLocalhostCertificate } from "./support/tls-certificate.js";

const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, "../../..");

describe("every protocol on one cleartext port", () => {
  let server: TestServer;
  let user: Awaited<ReturnType<typeof signUp>>;

  beforeAll(async () => {
    server = await startTestServer();
    user = await signUp(server.url, "transport");
  });
  afterAll(async () => {
    await server.close();
  });

  for (const protocol of protocols) {
    it(`${protocol}: signs in, writes, reads, and gets typed errors with details`, async () => {
      const transport = transportFor(protocol, server.url);
      const auth = clientFor(AuthService, transport);
      const users = clientFor(UserService, transport);
      const workspaces = clientFor(WorkspaceService, transport);

      const login = await auth.login({ email: user.email, password: user.password });
      const me = await users.whoami({}, bearer(login.accessToken));
      expect(me.user?.email).toBe(user.email);
      const created = await workspaces.createWorkspace(
        { name: `via ${protocol}` },
        bearer(login.accessToken),
      );
      const listed = await workspaces.listWorkspaces({}, bearer(login.accessToken));
      expect(listed.workspaces.map((w) => w.id)).toContain(created.workspace?.id);

      const error = await workspaces
        .getWorkspace({ workspaceId: "not-a-uuid" }, bearer(login.accessToken))
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(error?.rawMessage).toMatch(/workspaceId/);
      expect(error?.findDetails(ErrorInfoSchema)[0]).toMatchObject({
        reason: "INVALID_ARGUMENT",
        domain: "platform.v1",
      });
      expect(error?.findDetails(BadRequestSchema)[0]).toMatchObject({
        fieldViolations: [{ field: "workspaceId" }],
      });

      const unauthenticated = await users.whoami({}).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(unauthenticated?.code).toBe(Code.Unauthenticated);
    });
  }

  it("REST over HTTP/1.1 with plain fetch", async () => {
    const created = await restCall(
      server.url,
      "POST",
      "/v1/workspaces",
      { name: "via REST" },
      { token: user.accessToken },
    );
    expect(created.status).toBe(200);
    const id = created.body.workspace.id;
    const got = await restCall(server.url, "GET", `/v1/workspaces/${id}`, undefined, {
      token: user.accessToken,
    });
    expect(got.body.workspace.name).toBe("via REST");
    const patched = await restCall(
      server.url,
      "PATCH",
      `/v1/workspaces/${id}`,
      { description: "patched" },
      {
        token: user.accessToken,
      },
    );
    expect(patched.body.workspace).toMatchObject({ name: "via REST", description: "patched" });
    const deleted = await restCall(server.url, "DELETE", `/v1/workspaces/${id}`, undefined, {
      token: user.accessToken,
    });
    expect(deleted).toMatchObject({ status: 200, body: {} });
  });

  it("allows at least 100 concurrent HTTP/2 streams per connection", async () => {
    const session = http2.connect(server.url);
    try {
      await new Promise<void>((resolve, reject) => {
        session.once("remoteSettings", () => resolve());
        session.once("error", reject);
      });
      expect(session.remoteSettings.maxConcurrentStreams).toBeGreaterThanOrEqual(100);
    } finally {
      session.close();
    }
    // And they work: 150 calls at once over one connection.
    const users = clientFor(UserService, transportFor("connect-binary-h2", server.url));
    const answers = await Promise.all(
      Array.from({ length: 150 }, () => users.whoami({}, bearer(user.accessToken))),
    );
    expect(answers.every((a) => a.user?.email === user.email)).toBe(true);
  });

  it("buf curl calls an RPC with Connect and with gRPC (HTTP/2 prior knowledge)", async () => {
    const buf = join(repoRoot, "node_modules/.bin/buf");
    const call = async (protocol: string, procedure: string, body: unknown, token?: string) => {
      const args = [
        "curl",
        "--http2-prior-knowledge",
        "--schema",
        join(repoRoot, "proto"),
        "--protocol",
        protocol,
        "--data",
        JSON.stringify(body),
        ...(token ? ["-H", `Authorization: Bearer ${token}`] : []),
        `${server.url}/platform.v1.${procedure}`,
      ];
      const { stdout } = await run(buf, args, { cwd: repoRoot });
      return JSON.parse(stdout);
    };
    const login = await call("connect", "AuthService/Login", { email: user.email, password: user.password });
    expect(login.accessToken).toMatch(/^v4\.public\./);
    const me = await call("grpc", "UserService/Whoami", {}, login.accessToken);
    expect(me.user.email).toBe(user.email);
  });
});

describe("TLS with ALPN", () => {
  let server: TestServer;
  let dir: string;
  let ca: Buffer;

  beforeAll(async () => {
    const tls = await selfSignedLocalhostCertificate("wap-tls-");
    ({ dir, ca } = tls);
    server = await startTestServer({ tlsCert: tls.certPath, tlsKey: tls.keyPath });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves h2 by ALPN with TLS 1.3", async () => {
    expect(server.url).toMatch(/^https:\/\//);
    const session = http2.connect(server.url, { ca, minVersion: "TLSv1.3" });
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/healthz" });
        let text = "";
        req.setEncoding("utf8");
        req.on("data", (chunk: string) => (text += chunk));
        req.on("end", () => resolve(text));
        req.on("error", reject);
      });
      expect(session.alpnProtocol).toBe("h2");
      expect(JSON.parse(body)).toEqual({ status: "ok" });
    } finally {
      session.close();
    }
  });

  it("serves HTTP/1.1 on the same port, and marks the session cookie Secure", async () => {
    const agent = new https.Agent({ ca, ALPNProtocols: ["http/1.1"] });
    const post = (path: string, body: unknown) =>
      new Promise<{ status: number; cookie: string; alpn: string | false }>((resolve, reject) => {
        const req = https.request(`${server.url}${path}`, {
          method: "POST",
          agent,
          headers: { "content-type": "application/json" },
        });
        req.on("error", reject);
        req.on("response", (res) => {
          res.resume();
          const { alpnProtocol } = res.socket as unknown as { alpnProtocol: string | false };
          resolve({
            status: res.statusCode ?? 0,
            cookie: String(res.headers["set-cookie"] ?? ""),
            alpn: alpnProtocol,
          });
        });
        req.end(JSON.stringify(body));
      });
    try {
      const account = {
        name: "Tess TLS",
        email: "tess@example.com",
        username: "tess",
        password: "long enough pw",
      };
      expect((await post("/v1/register", account)).status).toBe(200);
      const login = await post("/v1/login", { email: account.email, password: account.password });
      expect(login.status).toBe(200);
      expect(login.alpn).toBe("http/1.1");
      expect(login.cookie).toMatch(
        /^session=[^,]+; HttpOnly; Secure; SameSite=Lax(, ?refresh=[^,]+; HttpOnly; Secure; SameSite=Strict)?$/,
      );
    } finally {
      agent.destroy();
    }
  });

  it("serves Connect over h2 to connect-node", async () => {
    const transport = transportFor("connect-binary-h2", server.url, { ca });
    const users = clientFor(UserService, transport);
    const error = await users.whoami({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unauthenticated);
  });
});

describe("graceful shutdown", () => {
  it("finishes the requests in flight, then stops", async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const server = await startTestServer();
    const real = server.platform;
    // Hold one request inside the platform while the server is asked to close.
    const originalInvoke = real.invoke.bind(real);
    (real as { invoke: typeof real.invoke }).invoke = async (method, ctx, request) => {
      if (method.name === "ListWorkspaces") {
        entered();
        await held;
      }
      return originalInvoke(method, ctx, request);
    };
    const user = await signUp(server.url, "shutdown");
    const inFlight = restCall(server.url, "GET", "/v1/workspaces", undefined, { token: user.accessToken });
    await inside;
    const closed = server.close();
    release();
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    await closed;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});

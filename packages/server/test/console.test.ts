/**
 * The web console on the API's port: its files at `/` with a history fallback and strict headers,
 * before the rate limit; API paths untouched; off with `console: false`. And the refresh cookie
 * that keeps a browser session past the access token: set on sign-in, spent by RefreshToken with
 * an empty body, rotated, and refused when replayed.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectCall, signUp } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.js";
import { isApiPath } from "../src/console-assets.js";

let consoleDir: string;
let server: TestServer;
const script = `console.log(${JSON.stringify("x".repeat(2000))});`;

beforeAll(async () => {
  consoleDir = await mkdtemp(join(tmpdir(), "wap-console-dist-"));
  await mkdir(join(consoleDir, "assets"));
  await writeFile(
    join(consoleDir, "index.html"),
    '<!doctype html><script type="module" src="/assets/app-1a2b.js"></script>',
  );
  await writeFile(join(consoleDir, "assets", "app-1a2b.js"), script);
  server = await startTestServer({ consoleDir });
});
afterAll(async () => {
  await server?.close();
  await rm(consoleDir, { recursive: true, force: true });
});

describe("the console's files", () => {
  it("answers every page path with index.html, strict headers and no caching", async () => {
    for (const path of [
      "/",
      "/sign-in",
      "/verify-email?token=abc",
      "/invites/tok",
      "/cli-login?code=c",
      "/w/x/audit",
    ]) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("'unsafe-inline' 'self'");
      expect(csp.split(";").find((d) => d.trim().startsWith("script-src"))).not.toContain("unsafe-inline");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(await res.text()).toContain("/assets/app-1a2b.js");
    }
  });

  it("serves hashed assets as immutable, gzipped when asked, and a missing one as 404", async () => {
    const res = await fetch(`${server.url}/assets/app-1a2b.js`, { headers: { "accept-encoding": "gzip" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await res.text()).toBe(script);
    expect((await fetch(`${server.url}/assets/gone-0000.js`)).status).toBe(404);
  });

  it("spends none of the rate-limit budget, while API calls still do", async () => {
    const limited = await startTestServer({
      consoleDir,
      rateLimit: { anonymousPoints: 3, authenticatedPoints: 0 },
    });
    try {
      for (let i = 0; i < 10; i++) {
        const res = await fetch(`${limited.url}/sign-in`);
        expect(res.status).toBe(200);
        expect(res.headers.get("x-ratelimit-limit")).toBeNull();
      }
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${limited.url}/v1/whoami`)).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it("leaves API paths to the API: REST, procedures and non-GET methods answer JSON", async () => {
    expect(isApiPath("/v1/whoami")).toBe(true);
    expect(isApiPath("/platform.v1.UserService/Whoami")).toBe(true);
    expect(isApiPath("/healthz")).toBe(true);
    expect(isApiPath("/invites/abc")).toBe(false);
    expect(isApiPath("/cli-login")).toBe(false);
    const health = await fetch(`${server.url}/healthz`);
    expect(await health.json()).toEqual({ status: "ok" });
  });

  it("is off with --console=false or WAP_CONSOLE=false", async () => {
    expect(parseConfig(["--console=false"]).config.console).toBe(false);
    expect(parseConfig([], { WAP_CONSOLE: "false" }).config.console).toBe(false);
    expect(parseConfig([]).config.console).toBe(true);
    expect(() => parseConfig(["--console=maybe"])).toThrow(/--console must be true or false/);
    const off = await startTestServer({ consoleDir, console: false });
    try {
      const res = await fetch(`${off.url}/sign-in`);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toContain("application/json");
    } finally {
      await off.close();
    }
  });
});

describe("the refresh cookie", () => {
  const refreshPath = "/platform.v1.AuthService/RefreshToken";
  const sameOrigin = () => ({ origin: server.url, "connect-protocol-version": "1" });
  const cookieOf = (headers: Headers, name: string) =>
    headers.getSetCookie().find((c) => c.startsWith(`${name}=`));

  it("is set by Login, HttpOnly, SameSite=Strict, only for RefreshToken's path", async () => {
    const user = await signUp(server.url, "cookie");
    const login = await connectCall(server.url, "platform.v1.AuthService/Login", {
      email: user.email,
      password: user.password,
    });
    const refresh = cookieOf(login.headers, "refresh");
    expect(refresh).toBeDefined();
    expect(refresh).toContain(`refresh=${login.body.refreshToken}`);
    expect(refresh).toContain("HttpOnly");
    expect(refresh).toContain("SameSite=Strict");
    expect(refresh).toContain(`Path=${refreshPath}`);
    expect(refresh).not.toContain("Secure");
  });

  it("is spent by RefreshToken with an empty body, rotated, and a replay ends the session", async () => {
    const user = await signUp(server.url, "rotate");
    const first = `refresh=${user.refreshToken}`;
    const refreshed = await connectCall(
      server.url,
      refreshPath.slice(1),
      {},
      { cookie: first, headers: sameOrigin() },
    );
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.accessToken).toEqual(expect.any(String));
    const rotated = cookieOf(refreshed.headers, "refresh")!;
    expect(rotated).toContain(`refresh=${refreshed.body.refreshToken}`);
    expect(refreshed.body.refreshToken).not.toBe(user.refreshToken);
    expect(cookieOf(refreshed.headers, "session")).toContain(`session=${refreshed.body.accessToken}`);

    // The spent cookie again: reuse detection ends the whole session, the new token included.
    const replay = await connectCall(
      server.url,
      refreshPath.slice(1),
      {},
      { cookie: first, headers: sameOrigin() },
    );
    expect(replay.status).toBe(401);
    const next = await connectCall(
      server.url,
      refreshPath.slice(1),
      {},
      { cookie: `refresh=${refreshed.body.refreshToken}`, headers: sameOrigin() },
    );
    expect(next.status).toBe(401);
  });

  it("is refused from another origin", async () => {
    const user = await signUp(server.url, "foreign");
    const res = await connectCall(
      server.url,
      refreshPath.slice(1),
      {},
      { cookie: `refresh=${user.refreshToken}`, headers: { origin: "https://evil.example" } },
    );
    expect(res.status).toBe(403);
    expect(res.body.message).toMatch(/cross-site request refused/);
  });

  it("is cleared by Logout", async () => {
    const user = await signUp(server.url, "logout");
    const res = await connectCall(
      server.url,
      "platform.v1.AuthService/Logout",
      {},
      { token: user.accessToken },
    );
    expect(res.status).toBe(200);
    expect(cookieOf(res.headers, "refresh")).toContain("Max-Age=0");
  });
});

/**
 * The grpc-web JavaScript client in a real browser (Debian's chromium through playwright-core),
 * in its default mode, gRPC-Web text, from a page of another allowed origin: a unary call, a
 * refusal naming the bad field, and a server stream whose events arrive while it stays open.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { type Browser, chromium, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GrpcWebApi } from "./grpc-web/client.js";

let server: TestServer;
let browser: Browser;
let page: Page;
/** The web app: its page and script, served from another origin, which the server allows. */
let app: http.Server;
let origin: string;
const contentTypes: string[] = [];

declare const grpcWeb: GrpcWebApi;

/** The test's web app: grpc-web and the contract's messages, bundled for the browser. */
async function bundle(): Promise<string> {
  const output = await build({
    configFile: false,
    logLevel: "silent",
    resolve: { conditions: ["dev-source", "browser", "module", "import", "default"] },
    build: {
      write: false,
      minify: false,
      target: "es2022",
      lib: { entry: join(import.meta.dirname, "grpc-web", "client.ts"), formats: ["es"], fileName: "client" },
    },
  });
  const [result] = Array.isArray(output) ? output : [output];
  const chunk = (result as { output: Array<{ type: string; code?: string }> }).output.find(
    (o) => o.type === "chunk",
  );
  return chunk!.code!;
}

beforeAll(async () => {
  const script = await bundle();
  app = http.createServer((req, res) => {
    const js = req.url === "/client.js";
    res.writeHead(200, { "content-type": js ? "text/javascript" : "text/html" });
    res.end(js ? script : '<!doctype html><script type="module" src="/client.js"></script>');
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  origin = `http://localhost:${(app.address() as AddressInfo).port}`;
  server = await startTestServer({ allowedOrigins: [origin] });
  browser = await chromium.launch({
    executablePath: process.env.WAP_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  page = await browser.newPage();
  page.on("request", (request) => {
    if (request.method() === "POST") contentTypes.push(request.headers()["content-type"] ?? "");
  });
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => "grpcWeb" in globalThis);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  app?.close();
});

describe("the grpc-web client in a browser, in text mode", { timeout: 60_000 }, () => {
  let account: Awaited<ReturnType<typeof signUpWithWorkspace>>;

  beforeAll(async () => {
    account = await signUpWithWorkspace(server.url, "grpc-web");
  });

  it("calls a unary RPC across origins", async () => {
    const answer = await page.evaluate(([url, email, password]) => grpcWeb.login(url, email, password), [
      server.url,
      account.email,
      account.password,
    ] as const);
    expect(answer.ok && answer.value.accessToken.length).toBeGreaterThan(0);
    expect(contentTypes).toContain("application/grpc-web-text");
  });

  it("hears a refusal with its code and the bad field named", async () => {
    const answer = await page.evaluate(([url]) => grpcWeb.login(url, "not an email", "x"), [
      server.url,
    ] as const);
    expect(answer).toMatchObject({ ok: false, code: 3 });
    expect(!answer.ok && answer.message).toMatch(/email/);
  });

  it("receives a server stream's events while the stream stays open", async () => {
    // The stream's headers arrive once the subscription is in place.
    const subscribed = page.waitForResponse((response) =>
      response.url().endsWith("/SubscribeWorkspaceEvents"),
    );
    await page.evaluate(([url, token, workspaceId]) => grpcWeb.subscribe(url, token, workspaceId), [
      server.url,
      account.accessToken,
      account.workspaceId,
    ] as const);
    expect((await subscribed).headers()["content-type"]).toBe("application/grpc-web-text+proto");
    for (const name of ["renamed once", "renamed twice"]) {
      const renamed = await restCall(
        server.url,
        "PATCH",
        `/v1/workspaces/${account.workspaceId}`,
        { name },
        { token: account.accessToken },
      );
      expect(renamed.status).toBe(200);
      await page.waitForFunction(
        (count) => grpcWeb.stream.events.length >= count,
        name === "renamed once" ? 1 : 2,
      );
    }
    const stream = await page.evaluate(() => grpcWeb.stream);
    expect(stream.events).toEqual([
      { type: "workspace.update", workspaceId: account.workspaceId },
      { type: "workspace.update", workspaceId: account.workspaceId },
    ]);
    expect(stream.ended).toBe("");
    await page.evaluate(() => grpcWeb.cancel());
  });
});

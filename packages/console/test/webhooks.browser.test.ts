/**
 * The console's Webhooks page in a real browser (Debian's chromium through playwright-core)
 * against a real server and a webhook receiver on loopback (allowed for the test): an endpoint
 * added (its secret shown once), a test message delivered, the attempts listed, the receiver
 * stopped (the page shows the endpoint failing and why) and started again (up to date), then the
 * endpoint deleted.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createArgon2PasswordHasher } from "@wap/core";
import { createServer, type RunningServer, silentLogger } from "@wap/server";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const consoleRoot = dirname(dirname(fileURLToPath(import.meta.url)));

let server: RunningServer;
let dataDir: string;
let base: string;
let browser: Browser;
let page: Page;
let receiver: http.Server;
let receiverPort: number;
const received: string[] = [];

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function listen(): Promise<void> {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => receiver.listen(receiverPort, "127.0.0.1", resolve));
}

function stopReceiver(): Promise<void> {
  receiver.closeAllConnections();
  return new Promise((resolve) => receiver.close(() => resolve()));
}

beforeAll(async () => {
  const build = spawnSync(process.execPath, [join(consoleRoot, "scripts", "ensure-built.mjs")], {
    stdio: "inherit",
  });
  expect(build.status).toBe(0);
  dataDir = await mkdtemp(join(tmpdir(), "wap-console-webhooks-"));
  receiverPort = await freePort();
  await listen();
  const port = await freePort();
  base = `http://localhost:${port}`;
  server = await createServer({
    host: "127.0.0.1",
    port,
    dataDir,
    publicUrl: base,
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
    shutdownGraceSeconds: 1,
    platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
    integrations: {
      webhooks: {
        allowNetworks: ["127.0.0.1"],
        allowHttp: true,
        pollMs: 50,
        retryBaseMs: 50,
        retryMaxMs: 300,
      },
    },
  });
  browser = await chromium.launch({
    executablePath: process.env.WAP_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await stopReceiver().catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
});

describe("the console's webhooks page", { timeout: 60_000 }, () => {
  it("adds an endpoint, tests it, shows its deliveries and failures, and deletes it", async () => {
    const owner = await signUpWithWorkspace(base, "grace");
    await page.goto(`${base}/sign-in`);
    await page.getByLabel("Email", { exact: true }).fill(owner.email);
    await page.getByLabel("Password", { exact: true }).fill(owner.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Workspaces" }).waitFor();
    await page.goto(`${base}/w/${owner.workspaceId}`);
    await page.getByRole("link", { name: "Webhooks", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
    await page.getByText("No webhook endpoint yet.").waitFor();

    const url = `http://127.0.0.1:${receiverPort}/wap`;
    await page.getByLabel("URL", { exact: true }).fill(url);
    await page.getByLabel("Description", { exact: true }).fill("SIEM");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = await page.getByRole("textbox", { name: "Signing secret" }).inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await page.getByRole("button", { name: "Done", exact: true }).click();
    await expect.poll(() => page.getByRole("textbox", { name: "Signing secret" }).count()).toBe(0);

    // Its own creation is the first event it receives.
    await expect.poll(() => received.some((b) => b.includes('"webhook.create"'))).toBe(true);
    await page.getByRole("button", { name: `Send a test to ${url}` }).click();
    await page
      .getByRole("status")
      .getByText(/The test message was delivered \(HTTP 204/)
      .waitFor();
    await page.getByRole("button", { name: `Deliveries of ${url}` }).click();
    const attempts = page.getByRole("table", { name: "Delivery attempts" });
    await attempts.getByText("webhook.create").waitFor();

    // Down: a change is not delivered; the page shows the endpoint failing and why.
    await stopReceiver();
    await page.getByRole("button", { name: `Disable ${url}` }).click();
    await page.getByRole("button", { name: `Enable ${url}` }).click();
    const endpoints = page.getByRole("table", { name: "Webhook endpoints" });
    await endpoints.getByText(/Failing since/).waitFor();
    await endpoints.getByText(/Last error: .*ECONNREFUSED/).waitFor();
    await attempts
      .getByText(/ECONNREFUSED/)
      .first()
      .waitFor();

    // Up again: everything arrives, and the page says so.
    await listen();
    await endpoints.getByText("Up to date").waitFor({ timeout: 30_000 });
    expect(received.some((b) => b.includes('"webhook.update"'))).toBe(true);

    await page.getByRole("button", { name: `Delete ${url}` }).click();
    await page.getByRole("button", { name: `Yes, delete ${url}` }).click();
    await page.getByText("No webhook endpoint yet.").waitFor();
  });
});

/**
 * `wap webhooks`: the real binary against the real server, with a webhook receiver on loopback
 * (the server allows it for the test). Create prints the secret once, test sends a signed message,
 * rotate prints the new secret, deliveries and list show where delivery stands, delete removes it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AuthService } from "@wap/api";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const bin = fileURLToPath(new URL(`../dist/wap-webhooks-test-${process.pid}.mjs`, import.meta.url));

let server: TestServer;
let scratch: string;
let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let receiver: http.Server;
let hookUrl: string;
const received: { id: string; timestamp: string; signature: string; body: string }[] = [];

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function startWap(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env.PATH, HOME: scratch, LANG: "C.UTF-8", WAP_CONFIG_DIR: join(scratch, "config") },
    cwd: scratch,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function finished(child: ChildProcess): Promise<Result> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const wap = (args: readonly string[]) => finished(startWap(args));

async function signIn(): Promise<void> {
  const child = startWap(["login", "--server", server.url, "--no-browser"]);
  const done = finished(child);
  let printed = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer | string) => {
      printed += chunk.toString();
      if (printed.includes("Waiting for the sign-in")) resolve();
    });
    child.once("close", () => reject(new Error(`wap login ended early: ${printed}`)));
  });
  const url = /(https?:\/\/\S+\/cli-login\?\S+)/.exec(printed)![1]!;
  const userCode = /Type this code on the page, then approve: (\S+)/.exec(printed)?.[1] ?? "";
  await clientFor(AuthService, transportFor("connect-json-h1", server.url)).verifyCLILogin(
    { loginCode: new URL(url).searchParams.get("code")!, userCode },
    bearer(owner.accessToken),
  );
  expect((await done).code).toBe(0);
}

const signature = (secret: string, m: (typeof received)[number]) =>
  `v1,${createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${m.id}.${m.timestamp}.${m.body}`)
    .digest("base64")}`;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "wap-cli-webhooks-"));
  await build({
    entryPoints: [fileURLToPath(new URL("../src/bin.ts", import.meta.url))],
    outfile: bin,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    conditions: ["dev-source"],
    banner: {
      js: "import { createRequire as wapRequire } from 'node:module'; const require = wapRequire(import.meta.url);",
    },
    logLevel: "error",
  });
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        id: String(req.headers["webhook-id"]),
        timestamp: String(req.headers["webhook-timestamp"]),
        signature: String(req.headers["webhook-signature"]),
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/wap`;
  server = await startTestServer({
    integrations: { webhooks: { allowNetworks: ["127.0.0.1"], allowHttp: true, pollMs: 50 } },
  });
  owner = await signUpWithWorkspace(server.url, "hooks");
  await signIn();
}, 120_000);

afterAll(async () => {
  await server?.close();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await rm(bin, { force: true });
});

describe("wap webhooks", { timeout: 120_000 }, () => {
  it("creates, tests, rotates, lists and deletes an endpoint", async () => {
    const created = await wap(["webhooks", "create", hookUrl, "--description", "SIEM", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const endpoint = JSON.parse(created.stdout) as { id: string; secret: string; url: string };
    expect(endpoint.url).toBe(hookUrl);
    expect(endpoint.secret).toMatch(/^whsec_/);

    const tested = await wap(["webhooks", "test", endpoint.id]);
    expect(tested.code, tested.stderr).toBe(0);
    expect(tested.stdout).toMatch(/^Delivered \(HTTP 200, \d+ ms\), webhook-id [0-9a-f-]{36}\.$/m);
    const test = received.find((m) => m.body.includes('"webhook.test"'))!;
    expect(test.signature).toBe(signature(endpoint.secret, test));

    const rotated = await wap(["webhooks", "rotate", endpoint.id, "--overlap", "1h"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const secret = /^(whsec_\S+)$/m.exec(rotated.stdout)![1]!;
    expect(secret).not.toBe(endpoint.secret);
    expect(rotated.stdout).toContain("The previous secret signs beside it until");
    // The rotation is an audit event: it arrives signed by both secrets.
    await until(() => received.some((m) => m.body.includes('"webhook.rotate_secret"')));
    const rotation = received.find((m) => m.body.includes('"webhook.rotate_secret"'))!;
    expect(rotation.signature).toBe(`${signature(secret, rotation)} ${signature(endpoint.secret, rotation)}`);

    await until(async () => (await wap(["webhooks", "list"])).stdout.includes("up to date"));
    const listed = await wap(["webhooks", "list"]);
    expect(listed.stdout).toMatch(/^ID\s+URL\s+EVENTS\s+SEQUENCE\s+STATE/m);
    expect(listed.stdout).toContain(hookUrl);
    const deliveries = await wap(["webhooks", "deliveries", endpoint.id, "--json"]);
    const attempts = JSON.parse(deliveries.stdout) as { eventType: string; succeeded: boolean }[];
    expect(attempts.find((a) => a.eventType === "webhook.rotate_secret")?.succeeded).toBe(true);

    expect((await wap(["webhooks", "delete", endpoint.id])).code).toBe(0);
    expect((await wap(["webhooks", "list"])).stdout).toContain("No webhook endpoints");
  });

  it("refuses an id that is not one, and says why a test was not delivered", async () => {
    const bad = await wap(["webhooks", "delete", "--", "-rf"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not a webhook endpoint id");
    const created = await wap(["webhooks", "create", "http://127.0.0.1:1/closed", "--json"]);
    const { id } = JSON.parse(created.stdout) as { id: string };
    const failed = await wap(["webhooks", "test", id]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/not delivered: .*ECONNREFUSED/);
    await wap(["webhooks", "delete", id]);
  });
});

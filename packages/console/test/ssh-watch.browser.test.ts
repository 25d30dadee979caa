/**
 * Watching a live SSH login in the console, in Debian's chromium against a real server: the
 * owner sees a Watch button beside a live SSH login of a recording daemon, and the read-only view
 * shows what the login wrote so far, then what the daemon appends (within a second), then that it
 * ended and how; the Recordings page then lists the login with who, where, as whom, what and how long.
 */
import { spawnSync } from "node:child_process";
import { createServer as createNetServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { DaemonService } from "@wap/api";
import type { SshSessionRecord } from "@wap/core/storage";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { daemonTransport, type TerminalWorld, terminalWorld } from "@wap/test-kit/terminal";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const consoleRoot = dirname(dirname(fileURLToPath(import.meta.url)));

let server: TestServer;
let base: string;
let browser: Browser;
let world: TerminalWorld;

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

beforeAll(async () => {
  const build = spawnSync(process.execPath, [join(consoleRoot, "scripts", "ensure-built.mjs")], {
    stdio: "inherit",
  });
  expect(build.status).toBe(0);
  const port = await freePort();
  base = `http://localhost:${port}`;
  server = await startTestServer({
    port,
    publicUrl: base,
    shutdownGraceSeconds: 1,
    daemonKeepaliveSeconds: 3600,
  });
  world = await terminalWorld(server.url, "watch-console");
  browser = await chromium.launch({
    executablePath: process.env.WAP_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("watching an SSH login in the console", { timeout: 90_000 }, () => {
  it("follows a live login read-only and says when it ended", async () => {
    const daemon = await world.daemonOnline("watch-web-1");
    await world.admin.updateDaemon(
      { workspaceId: world.workspaceId, id: daemon.id, config: { recordSessions: true } },
      world.auth,
    );
    const storage = server.platform.services.storage;
    const target = await storage.targets.findById(world.workspaceId, daemon.targetId);
    const login: SshSessionRecord = {
      id: crypto.randomUUID(),
      workspaceId: world.workspaceId,
      daemonId: daemon.id,
      subjectId: world.userId,
      subjectType: "user",
      username: "ubuntu",
      caId: target!.caId,
      certificateSerial: "4242",
      keyId: "owner@laptop",
      clientAddress: "203.0.113.7:50022",
      kind: "shell",
      command: "",
      tty: true,
      recorded: true,
      startedAt: new Date(),
      endedAt: null,
      exitStatus: null,
      bytesIn: 0,
      bytesOut: 0,
      endedBy: "",
      endReason: "",
    };
    await storage.sshSessions.insert(login);
    const agent = createClient(DaemonService, daemonTransport(server.url, daemon.daemon));
    let offset = 0;
    const append = async (text: string, final = false) => {
      const data = new TextEncoder().encode(text);
      await agent.appendSSHRecording({ sessionId: login.id, offset: BigInt(offset), data, final });
      offset += data.byteLength;
    };
    await append(
      `{"version":2,"width":80,"height":24,"timestamp":1795262400}\n${JSON.stringify([0.1, "o", "first-line-before-watch\r\n"])}\n`,
    );

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/w/${world.workspaceId}/sessions`);
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.getByLabel("Email", { exact: true }).fill(world.email);
    await page.getByLabel("Password", { exact: true }).fill(world.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("button", { name: `Watch session ${login.id.slice(0, 8)}` }).click();
    await page.getByTestId("watch-state").filter({ hasText: "Watching (read-only)" }).waitFor();
    const screen = page.locator(".xterm-rows");
    await screen.filter({ hasText: "first-line-before-watch" }).waitFor();

    const appendedAt = Date.now();
    await append(`${JSON.stringify([0.5, "o", "appended-while-watching\r\n"])}\n`);
    await screen.filter({ hasText: "appended-while-watching" }).waitFor();
    // From the agent's append to the watcher's screen: well within a second.
    expect(Date.now() - appendedAt).toBeLessThan(1_000);

    await agent.endSSHSession({ sessionId: login.id, exitStatus: 0, reason: "the login ended (exit 0)" });
    await append(`${JSON.stringify([1, "m", "exit status 0"])}\n`, true);
    await page
      .getByTestId("watch-state")
      .filter({ hasText: "Login ended: the login ended: the login ended (exit 0)" })
      .waitFor();

    // The recordings list says who, where, as whom, what, when and for how long.
    await page.goto(`${base}/w/${world.workspaceId}/recordings`);
    const row = page
      .getByRole("row")
      .filter({ has: page.getByRole("button", { name: `Play recording ${login.id.slice(0, 8)}` }) });
    await row.waitFor();
    const [started, who, where, as, what, howLong, , state] = await row.getByRole("cell").allInnerTexts();
    expect(started).not.toBe("");
    expect(who).not.toBe("");
    expect(who).not.toBe(world.userId.slice(0, 8));
    expect({ where, as, what, state }).toEqual({
      where: "watch-web-1",
      as: "ubuntu",
      what: "ssh from 203.0.113.7:50022",
      state: "complete",
    });
    expect(howLong).toMatch(/^\d+ s$/);
    await context.close();
  });

  it("closes a watched login from the Sessions page, and the watch says who closed it", async () => {
    const daemon = await world.daemonOnline("watch-web-2");
    await world.admin.updateDaemon(
      { workspaceId: world.workspaceId, id: daemon.id, config: { recordSessions: true } },
      world.auth,
    );
    const storage = server.platform.services.storage;
    const target = await storage.targets.findById(world.workspaceId, daemon.targetId);
    const id = crypto.randomUUID();
    await storage.sshSessions.insert({
      id,
      workspaceId: world.workspaceId,
      daemonId: daemon.id,
      subjectId: world.userId,
      subjectType: "user",
      username: "ubuntu",
      caId: target!.caId,
      certificateSerial: "4343",
      keyId: "owner@laptop",
      clientAddress: "203.0.113.8:50022",
      kind: "exec",
      command: "tail -f /var/log/syslog",
      tty: false,
      recorded: true,
      startedAt: new Date(),
      endedAt: null,
      exitStatus: null,
      bytesIn: 0,
      bytesOut: 0,
      endedBy: "",
      endReason: "",
    });
    const agent = createClient(DaemonService, daemonTransport(server.url, daemon.daemon));
    await agent.appendSSHRecording({
      sessionId: id,
      offset: 0n,
      data: new TextEncoder().encode(
        `{"version":2,"width":80,"height":24,"timestamp":1795262400}\n${JSON.stringify([0.1, "o", "watched-before-close\r\n"])}\n`,
      ),
    });
    const owner = await storage.users.findById(world.userId);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/w/${world.workspaceId}/sessions`);
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.getByLabel("Email", { exact: true }).fill(world.email);
    await page.getByLabel("Password", { exact: true }).fill(world.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("button", { name: `Watch session ${id.slice(0, 8)}` }).click();
    await page.getByTestId("watch-state").filter({ hasText: "Watching (read-only)" }).waitFor();
    await page.getByRole("button", { name: `Close session ${id.slice(0, 8)}` }).click();
    await page.getByRole("button", { name: `Yes, close session ${id.slice(0, 8)}` }).click();
    await page
      .getByTestId("watch-state")
      .filter({ hasText: `(closed from the platform by ${owner!.name})` })
      .waitFor();
    expect(await storage.sshSessions.findById(world.workspaceId, id)).toMatchObject({
      endedBy: `user:${world.userId}`,
    });
    await context.close();
  });
});

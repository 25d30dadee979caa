/**
 * The whole terminal path, end to end and for real: the server over HTTP/2 and SQLite, the
 * simulated daemon enrolled with a token and accepted, a login granted, then a browser (a `ws`
 * WebSocket) typing into a shell on the daemon through the server's relay.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CertificateKeyType, DaemonStatus, PrincipalType } from "@wap/api";
import { createPlatformClient, type PlatformClient } from "@wap/client";
import { createArgon2PasswordHasher } from "@wap/core";
import { createServer, type RunningServer, type ServerOptions, silentLogger } from "@wap/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  type SimulatedDaemon,
  type SimulatedDaemonEvents,
  type SimulatedDaemonOptions,
  startSimulatedDaemon,
} from "./simulated-daemon.js";

let server: RunningServer;
let dataDir: string;
let ada: PlatformClient;
let userId: string;
let workspaceId: string;
let enrollToken: string;
const machines: Machine[] = [];

const serverOptions = (): ServerOptions => ({
  host: "127.0.0.1",
  port: 0,
  dataDir,
  logger: silentLogger,
  rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
  shutdownGraceSeconds: 2,
  platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
});

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "wap-daemon-server-"));
  server = await createServer(serverOptions());
  ada = createPlatformClient({ baseUrl: server.url });
  await ada.auth.register({
    name: "Ada Lovelace",
    email: "ada@example.com",
    username: "ada",
    password: "correct horse battery staple",
  });
  await ada.login("ada@example.com", "correct horse battery staple");
  userId = (await ada.users.whoami({})).user!.id;
  workspaceId = (await ada.workspaces.createWorkspace({ name: "Analytical Engines" })).workspace!.id;
  // The workspace's default SSH CA becomes the daemon's target CA (EnrollDaemon sends `caId: ""`).
  await ada.certificates.createCertificateAuthority({
    workspaceId,
    name: "ssh",
    keyType: CertificateKeyType.ED25519,
  });
  enrollToken = (await ada.daemons.refreshEnrollToken({ workspaceId })).token;
});

afterAll(async () => {
  for (const machine of machines) {
    if (process.env.WAP_DEBUG_DAEMON) console.log(machine.logs.join("\n"));
    await machine.daemon?.stop();
    await rm(machine.stateDir, { recursive: true, force: true });
  }
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a daemon with a shell", () => {
  let m: Machine;
  beforeAll(async () => {
    m = await aMachine({ terminal: "shell", hostname: "sim-1" });
  });

  it("enrols, opens its control stream, and once accepted and granted a login gets the principals and a host certificate", async () => {
    await m.start();
    expect(m.daemon.id).toMatch(/^[0-9a-f-]{36}$/);
    await until(async () => (await getDaemon(m)).online, "the daemon is online", m);
    const pending = await getDaemon(m);
    expect(pending.status).toBe(DaemonStatus.PENDING);
    expect(pending.metadata).toMatchObject({ hostname: "sim-1", os: expect.any(String) });

    await ada.daemons.updateDaemon({ workspaceId, id: m.daemon.id, status: DaemonStatus.ACCEPTED });
    await grantLogin(m, "ubuntu");
    await until(
      () => m.daemon.principals().get("ubuntu")?.includes(userId),
      "the grant reaches the daemon through a notification and SyncDaemon",
      m,
    );
    const certificate = await until(
      () => m.seen["host-certificate"].find((c) => "principals" in c),
      "a host certificate is signed after the daemon is accepted",
      m,
    );
    expect(certificate).toMatchObject({ principals: [m.daemon.targetId] });
    expect(m.seen.synced.at(-1)?.status).toBe(DaemonStatus.ACCEPTED);
  });

  it("runs a shell for the browser: typed input reaches it, its output comes back, resize reaches the pty", async () => {
    const sessionId = await createSession(m);
    const browser = await Browser.attach(sessionId);
    await until(
      () => m.seen["session-started"].find((s) => s.sessionId === sessionId),
      "the session opens",
      m,
    );

    browser.type("echo hello-$((6*7))\n");
    await until(() => browser.text.includes("hello-42"), "the shell's answer reaches the browser", m);

    browser.resize(100, 40);
    await until(
      () =>
        m.seen["session-resized"].find((r) => r.sessionId === sessionId && r.cols === 100 && r.rows === 40),
      "the resize reaches the daemon",
      m,
    );
    browser.type("stty size\n");
    await until(() => browser.text.includes("40 100"), "the shell sees the new size", m);

    browser.close();
    await until(
      () => m.seen["session-ended"].find((e) => e.sessionId === sessionId),
      "closing the WebSocket ends the daemon's session",
      m,
    );
    await until(
      async () => !(await liveSessions(m)).includes(sessionId),
      "the session is no longer listed",
      m,
    );
    expect(m.daemon.sessions()).not.toContain(sessionId);
  });

  it("CloseSession ends the daemon's session and the browser's socket", async () => {
    const sessionId = await createSession(m);
    const browser = await Browser.attach(sessionId);
    browser.type("echo ready-$((1+1))\n");
    await until(() => browser.text.includes("ready-2"), "the shell answers", m);

    await ada.daemons.closeSession({ workspaceId, daemonId: m.daemon.id, sessionId });
    const ended = await until(
      () => m.seen["session-ended"].find((e) => e.sessionId === sessionId),
      "the daemon's session ends",
      m,
    );
    expect(ended.reason).toMatch(/closed by the server/);
    const closed = await browser.closed;
    expect(closed.code).toBe(1000);
    expect(browser.controlFrames.at(-1)).toMatchObject({ type: "closed" });
  });

  it("after the server restarts, it reconnects, syncs again and serves sessions again", async () => {
    const { port } = server;
    const syncsBefore = m.seen.synced.length;
    await server.close();
    server = await createServer({ ...serverOptions(), port });
    await until(() => m.seen.synced.length > syncsBefore, "a SyncDaemon after the reconnect", m);
    await until(async () => (await getDaemon(m)).online, "the daemon is online again", m);
    expect(m.seen["control-stream"].some((s) => s.state === "closed")).toBe(true);

    const sessionId = await createSession(m);
    const browser = await Browser.attach(sessionId);
    browser.type("echo again-$((2*3))\n");
    await until(() => browser.text.includes("again-6"), "the shell answers after the restart", m);
    browser.close();
    await until(() => m.seen["session-ended"].find((e) => e.sessionId === sessionId), "the session ends", m);
  });

  it("started again with the same state and token, it is the same daemon (AlreadyExists)", async () => {
    const id = m.daemon.id;
    await m.daemon.stop();
    await m.start();
    expect(m.daemon.id).toBe(id);
    expect(m.logs.some((line) => line.startsWith("already enrolled"))).toBe(true);
    await until(async () => (await getDaemon(m)).online, "the daemon is online again", m);
  });

  it("rejected, it forgets its enrolment and exits with status 1", async () => {
    await ada.daemons.updateDaemon({ workspaceId, id: m.daemon.id, status: DaemonStatus.REJECTED });
    const result = await m.daemon.done;
    expect(result).toEqual({ exitCode: 1, reason: "rejected" });
    expect(m.seen.rejected).toHaveLength(1);
    expect(existsSync(join(m.stateDir, "config.json"))).toBe(false);
    // The key stays: the machine can enrol again with a new token.
    expect(existsSync(join(m.stateDir, "state.json"))).toBe(true);
    await expect(
      startSimulatedDaemon({ url: server.url, stateDir: m.stateDir, log: () => {} }),
    ).rejects.toThrow(/not enrolled/);
  });
});

describe("a daemon with the scripted echo terminal", () => {
  let m: Machine;
  beforeAll(async () => {
    m = await aMachine({ terminal: "echo", hostname: "sim-echo", heartbeatIntervalMs: 50 });
    await m.start();
    await until(async () => (await getDaemon(m)).online, "the daemon is online", m);
    await ada.daemons.updateDaemon({ workspaceId, id: m.daemon.id, status: DaemonStatus.ACCEPTED });
    await grantLogin(m, "ubuntu");
    await until(() => m.daemon.principals().get("ubuntu")?.includes(userId), "the grant reaches it", m);
  });

  it("keeps its control stream open while it sends heartbeats", async () => {
    await until(() => m.seen.heartbeat.length >= 3, "three heartbeats", m);
    expect(m.seen["control-stream"].filter((s) => s.state === "closed")).toEqual([]);
    expect((await getDaemon(m)).online).toBe(true);
  });

  it("echoes, reports its size, and ends the session itself on `exit`", async () => {
    const sessionId = await createSession(m);
    const browser = await Browser.attach(sessionId);
    browser.type("hi there\r");
    await until(() => browser.text.includes("hi there\r\nhi there\r\n"), "the line comes back", m);
    browser.resize(120, 30);
    browser.type("stty size\r");
    await until(() => browser.text.includes("30 120"), "the terminal has the new size", m);

    // The daemon ends the session: it cancels its stream, and the server closes the browser's socket.
    browser.type("exit\r");
    const closed = await browser.closed;
    expect(closed.code).toBe(1000);
    expect(m.seen["session-ended"].find((e) => e.sessionId === sessionId)?.reason).toBe("exit typed");
    await until(
      async () => !(await liveSessions(m)).includes(sessionId),
      "the session is no longer listed",
      m,
    );
  });
});

// ---------------------------------------------------------------------------------------------

type Recorded = { [K in keyof SimulatedDaemonEvents]: SimulatedDaemonEvents[K][0][] };

/** One simulated machine: its state directory, its daemon (once started) and what it did. */
interface Machine {
  readonly stateDir: string;
  readonly logs: string[];
  daemon: SimulatedDaemon;
  seen: Recorded;
  start(): Promise<void>;
}

async function aMachine(options: Partial<SimulatedDaemonOptions>): Promise<Machine> {
  const stateDir = await mkdtemp(join(tmpdir(), "wap-daemon-state-"));
  const logs: string[] = [];
  const machine: Machine = {
    stateDir,
    logs,
    daemon: undefined as unknown as SimulatedDaemon,
    seen: undefined as unknown as Recorded,
    async start() {
      const daemon = await startSimulatedDaemon({
        url: server.url,
        enrollToken,
        stateDir,
        users: ["ubuntu"],
        log: (line) => logs.push(line),
        ...options,
      });
      machine.daemon = daemon;
      machine.seen = record(daemon);
    },
  };
  machines.push(machine);
  return machine;
}

/** Every event the daemon emits from now on, by name. */
function record(daemon: SimulatedDaemon): Recorded {
  const names: (keyof SimulatedDaemonEvents)[] = [
    "enrolled",
    "synced",
    "host-certificate",
    "control-stream",
    "heartbeat",
    "notification",
    "session-started",
    "session-refused",
    "session-resized",
    "session-ended",
    "rejected",
    "log",
  ];
  const recorded = Object.fromEntries(names.map((name) => [name, []])) as unknown as Recorded;
  for (const name of names) {
    daemon.events.on(name, (...args: unknown[]) => (recorded[name] as unknown[]).push(args[0]));
  }
  return recorded;
}

/** Polls `probe` until it gives a truthy value (the test's own timeout bounds the wait). */
async function until<T>(probe: () => T | Promise<T>, what: string, m: Machine): Promise<NonNullable<T>> {
  for (let attempt = 0; ; attempt++) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (attempt === 400) throw new Error(`still waiting: ${what}\n${m.logs.slice(-10).join("\n")}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function getDaemon(m: Machine) {
  return (await ada.daemons.getDaemon({ workspaceId, id: m.daemon.id })).daemon!;
}

async function liveSessions(m: Machine): Promise<string[]> {
  const { sessions } = await ada.daemons.listSessions({ workspaceId, daemonId: m.daemon.id });
  return sessions.map((s) => s.sessionId);
}

async function grantLogin(m: Machine, username: string): Promise<void> {
  const targetId = m.daemon.targetId;
  await ada.principals.setPrincipals({ workspaceId, targetId, usernames: [username] });
  const { principals } = await ada.principals.listPrincipals({
    workspaceId,
    targetId,
    limit: 100,
    offset: 0,
  });
  await ada.principals.addSubjectsToPrincipal({
    workspaceId,
    id: principals.find((p) => p.username === username)!.id,
    subjectIds: [userId],
    type: PrincipalType.USER,
  });
}

async function createSession(m: Machine): Promise<string> {
  const { session } = await ada.daemons.createSession({
    workspaceId,
    daemonId: m.daemon.id,
    username: "ubuntu",
  });
  return session!.sessionId;
}

/** The browser's side of a terminal: the WebSocket endpoint, with the access token as a subprotocol. */
class Browser {
  text = "";
  readonly controlFrames: Array<Record<string, unknown>> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data, isBinary) => {
      if (isBinary) this.text += Buffer.from(data as Buffer).toString("utf8");
      else this.controlFrames.push(JSON.parse(String(data)) as Record<string, unknown>);
    });
    this.closed = new Promise((resolve) =>
      socket.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  static async attach(sessionId: string): Promise<Browser> {
    const url = `${server.url.replace(/^http/, "ws")}/v1/workspaces/${workspaceId}/sessions/${sessionId}/terminal`;
    const token = ada.tokens.get()!.accessToken;
    const socket = new WebSocket(url, ["wap.terminal.v1", `wap.bearer.${token}`]);
    const browser = new Browser(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("unexpected-response", (_req, res) =>
        reject(new Error(`upgrade refused: ${res.statusCode}`)),
      );
      socket.once("error", reject);
    });
    expect(socket.protocol).toBe("wap.terminal.v1");
    return browser;
  }

  type(text: string): void {
    this.socket.send(Buffer.from(text), { binary: true });
  }

  resize(cols: number, rows: number): void {
    this.socket.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  close(): void {
    this.socket.close(1000);
  }
}

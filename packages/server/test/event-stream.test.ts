/**
 * WorkspaceService.SubscribeWorkspaceEvents through the real server (embedded SQLite, the
 * in-process bus): over Connect and gRPC as a server stream, over REST as NDJSON.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { WorkspaceService } from "@wap/api";
import { bearer, clientFor, type Protocol, streamError, transportFor } from "@wap/test-kit/clients";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNdjson } from "./support/ndjson.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const rename = (user: { workspaceId: string; accessToken: string }, name: string) =>
  restCall(server.url, "PATCH", `/v1/workspaces/${user.workspaceId}`, { name }, { token: user.accessToken });

describe("SubscribeWorkspaceEvents over Connect and gRPC", () => {
  for (const protocol of ["connect-json-h2", "grpc-h2", "connect-json-h1"] satisfies Protocol[]) {
    it(`streams changes as they happen (${protocol})`, async () => {
      const user = await signUpWithWorkspace(server.url, "streamer");
      const client = clientFor(WorkspaceService, transportFor(protocol, server.url));
      const controller = new AbortController();
      const stream = client.subscribeWorkspaceEvents(
        { workspaceId: user.workspaceId, eventTypes: ["workspace.update"] },
        bearer(user.accessToken, { signal: controller.signal }),
      );
      const iterator = stream[Symbol.asyncIterator]();
      const first = iterator.next();
      // Connect sends nothing until the first message: keep changing until one arrives.
      const changes = setInterval(() => void rename(user, `renamed ${Date.now()}`), 100);
      try {
        const { value } = await first;
        expect(value).toMatchObject({ type: "workspace.update", workspaceId: user.workspaceId });
        expect(JSON.parse(value!.payloadJson)).toEqual({ resource: `workspace:${user.workspaceId}` });
      } finally {
        clearInterval(changes);
        controller.abort();
      }
      await iterator.next().catch(() => undefined);
    });
  }

  it("refuses a workspace the caller is not in, before the stream starts", async () => {
    const user = await signUpWithWorkspace(server.url, "outsider");
    const other = await signUpWithWorkspace(server.url, "insider");
    const client = clientFor(WorkspaceService, transportFor("connect-json-h2", server.url));
    const error = await streamError(
      client.subscribeWorkspaceEvents({ workspaceId: other.workspaceId }, bearer(user.accessToken)),
    );
    expect(error?.code).toBe(Code.NotFound);
  });
});

describe("SubscribeWorkspaceEvents over REST (newline-delimited JSON)", () => {
  it("answers 200 once subscribed, then one JSON line per event", async () => {
    const user = await signUpWithWorkspace(server.url, "curl");
    const stream = await openNdjson(server.url, `/v1/workspaces/${user.workspaceId}/events:subscribe`, {
      token: user.accessToken,
    });
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get("content-type")).toBe("application/x-ndjson");
      // The headers say the subscription is live: no retry loop needed.
      expect((await rename(user, "first")).status).toBe(200);
      expect((await rename(user, "second")).status).toBe(200);
      const first = (await stream.next()) as Record<string, string>;
      expect(first).toMatchObject({ type: "workspace.update", workspaceId: user.workspaceId });
      expect(first.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(JSON.parse(first.payload!)).toEqual({ resource: `workspace:${user.workspaceId}` });
      expect(await stream.next()).toMatchObject({ type: "workspace.update" });
    } finally {
      stream.close();
    }
  });

  it("filters by eventTypes (a repeated query parameter)", async () => {
    const user = await signUpWithWorkspace(server.url, "filter");
    const stream = await openNdjson(
      server.url,
      `/v1/workspaces/${user.workspaceId}/events:subscribe?eventTypes=service_account.create`,
      { token: user.accessToken },
    );
    try {
      await rename(user, "not this one");
      const created = await restCall(
        server.url,
        "POST",
        `/v1/workspaces/${user.workspaceId}/service_accounts`,
        { name: "bot" },
        { token: user.accessToken },
      );
      expect(created.status).toBe(200);
      expect(await stream.next()).toMatchObject({ type: "service_account.create" });
    } finally {
      stream.close();
    }
  });

  it("refuses with an ordinary REST error before the stream starts", async () => {
    const user = await signUpWithWorkspace(server.url, "rest-outsider");
    const other = await signUpWithWorkspace(server.url, "rest-insider");
    const path = `/v1/workspaces/${other.workspaceId}/events:subscribe`;
    const refused = await restCall(server.url, "GET", path, undefined, { token: user.accessToken });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ code: 5 });
    const anonymous = await restCall(server.url, "GET", path);
    expect(anonymous.status).toBe(401);
  });
});

describe("event streams and the logs", () => {
  it("a client leaving mid-stream is not an error", async () => {
    const user = await signUpWithWorkspace(server.url, "leaver");
    const stream = await openNdjson(server.url, `/v1/workspaces/${user.workspaceId}/events:subscribe`, {
      token: user.accessToken,
    });
    stream.close();
    await rename(user, "after the client left");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.logs.join("")).not.toContain('"level":"error"');
  });
});

describe("event streams at shutdown", () => {
  it("end at once with unavailable, so that the server stops without waiting out the grace period", async () => {
    const own = await startTestServer({ shutdownGraceSeconds: 30 });
    const user = await signUpWithWorkspace(own.url, "shutdown");
    const rest = await openNdjson(own.url, `/v1/workspaces/${user.workspaceId}/events:subscribe`, {
      token: user.accessToken,
    });
    const client = clientFor(WorkspaceService, transportFor("connect-json-h2", own.url));
    const connectEnd = (async () => {
      for await (const _ of client.subscribeWorkspaceEvents(
        { workspaceId: user.workspaceId },
        bearer(user.accessToken),
      )) {
        // nothing is published
      }
    })().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    await own.close();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await rest.next()).toMatchObject({
      error: { code: 14, message: expect.stringMatching(/shutting down/) },
    });
    const error = await connectEnd;
    expect(error?.code).toBe(Code.Unavailable);
  });
});

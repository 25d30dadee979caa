/**
 * grpc.health.v1.Health over gRPC, gRPC-Web and Connect: SERVING per service and for the whole
 * server, NOT_SERVING while the database does not answer, and NOT_SERVING once the server starts
 * draining: an open Watch hears it before its stream ends, and a Check answered inside the drain
 * window says so.
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@wap/api";
import type { Storage } from "@wap/core/storage";
import { createSqliteStorage } from "@wap/storage-sqlite";
import { clientFor, type Protocol, transportFor } from "@wap/test-kit/clients";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: TestServer;
let dir: string;
/** The database's ping fails while this is set: what an unreachable database looks like. */
let outage: Error | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-health-"));
  const storage = await createSqliteStorage({ filename: join(dir, "wap.db") });
  const faulty: Storage = Object.assign(Object.create(storage) as Storage, {
    ping: () => (outage ? Promise.reject(outage) : storage.ping()),
  });
  server = await startTestServer({ storage: faulty });
});
afterAll(async () => {
  await server?.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

const protocols: Protocol[] = ["grpc-h2", "grpc-web-h1", "connect-json-h1"];

describe("health checking", () => {
  for (const protocol of protocols) {
    it(`Check over ${protocol}: per service and for the server, NOT_SERVING in a database outage`, async () => {
      const health = clientFor(Health, transportFor(protocol, server.url));
      for (const service of ["", "platform.v1.CertificateService", "grpc.reflection.v1.ServerReflection"]) {
        expect((await health.check({ service })).status).toBe(Status.SERVING);
      }
      const unknown = await health.check({ service: "no.such.Service" }).catch((e: unknown) => e);
      expect(ConnectError.from(unknown).code).toBe(Code.NotFound);
      outage = new Error("connection refused");
      try {
        expect((await health.check({ service: "" })).status).toBe(Status.NOT_SERVING);
        expect((await health.check({ service: "platform.v1.UserService" })).status).toBe(Status.NOT_SERVING);
      } finally {
        outage = undefined;
      }
      expect((await health.list({})).statuses["platform.v1.UserService"]?.status).toBe(Status.SERVING);
    });
  }

  it("Watch reports SERVICE_UNKNOWN for an unknown service and keeps the stream open", async () => {
    const health = clientFor(Health, transportFor("grpc-h2", server.url));
    const unknown = health.watch({ service: "no.such.Service" })[Symbol.asyncIterator]();
    expect((await unknown.next()).value?.status).toBe(Status.SERVICE_UNKNOWN);
    await unknown.return?.();
  });
});

/** Resolves when `resolve` is called: lets a test hold the server at a point and await it there. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * A server of its own (each of these tests shuts one down) whose database ping can be held: while
 * `hold` is set, a ping reports `entered` and waits for `release`.
 */
async function drainableServer(): Promise<{
  server: TestServer;
  hold: () => { entered: Promise<void>; release: () => void };
}> {
  const storage = await createSqliteStorage({ filename: join(dir, `drain-${Math.random()}.db`) });
  let held: { entered: ReturnType<typeof deferred>; release: ReturnType<typeof deferred> } | undefined;
  const gated: Storage = Object.assign(Object.create(storage) as Storage, {
    ping: async () => {
      const current = held;
      if (current) {
        held = undefined;
        current.entered.resolve();
        await current.release.promise;
      }
      return storage.ping();
    },
  });
  // A grace period no test waits out: these drains must finish because the calls end, not because
  // the server cut them.
  const drainable = await startTestServer({ storage: gated, shutdownGraceSeconds: 600 });
  return {
    server: drainable,
    hold: () => {
      held = { entered: deferred(), release: deferred() };
      return { entered: held.entered.promise, release: held.release.resolve };
    },
  };
}

describe("health while the server drains", () => {
  for (const protocol of protocols) {
    it(`Watch over ${protocol}: an open Watch hears NOT_SERVING when the drain starts, then ends`, async () => {
      const { server: draining } = await drainableServer();
      const health = clientFor(Health, transportFor(protocol, draining.url));
      const watch = health.watch({ service: "" })[Symbol.asyncIterator]();
      try {
        expect((await watch.next()).value?.status).toBe(Status.SERVING);
        const closed = draining.close();
        // Not an error and not the end of the stream: the drain itself is reported first.
        expect(await watch.next()).toEqual({
          done: false,
          value: expect.objectContaining({ status: Status.NOT_SERVING }),
        });
        expect((await watch.next()).done).toBe(true);
        await closed;
      } finally {
        await watch.return?.().catch(() => undefined);
        await draining.close().catch(() => undefined);
      }
    });

    it(`Check over ${protocol}: a Check answered during the drain says NOT_SERVING`, async () => {
      const { server: draining, hold } = await drainableServer();
      const health = clientFor(Health, transportFor(protocol, draining.url));
      try {
        expect((await health.check({ service: "" })).status).toBe(Status.SERVING);
        // The Check reaches the database, the drain starts, then the database answers: the
        // answer leaves inside the drain window, and the drain waits for it.
        const ping = hold();
        const answer = health.check({ service: "platform.v1.UserService" });
        await ping.entered;
        const closed = draining.close();
        ping.release();
        expect((await answer).status).toBe(Status.NOT_SERVING);
        await closed;
      } finally {
        await draining.close().catch(() => undefined);
      }
    });
  }
});

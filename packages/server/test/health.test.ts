/**
 * grpc.health.v1.Health over gRPC, gRPC-Web and Connect: SERVING per service and for the whole
 * server, NOT_SERVING while the database does not answer, and a Watch that hears the server
 * start draining.
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

  it("Watch reports SERVICE_UNKNOWN for an unknown service, and NOT_SERVING once the server drains", async () => {
    const health = clientFor(Health, transportFor("grpc-h2", server.url));
    const unknown = health.watch({ service: "no.such.Service" })[Symbol.asyncIterator]();
    expect((await unknown.next()).value?.status).toBe(Status.SERVICE_UNKNOWN);
    await unknown.return?.();

    const watch = health.watch({ service: "" })[Symbol.asyncIterator]();
    expect((await watch.next()).value?.status).toBe(Status.SERVING);
    const closed = server.close();
    const next = await watch.next().catch((e: unknown) => e);
    // The drain is seen before the stream ends (or the stream ends because the server left).
    if (!(next instanceof Error))
      expect((next as IteratorResult<{ status: Status }>).value?.status).toBe(Status.NOT_SERVING);
    else expect(ConnectError.from(next).code).toBe(Code.Unavailable);
    await watch.return?.().catch(() => undefined);
    await closed;
  });
});

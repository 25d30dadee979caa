/**
 * The diagnostics listener and what it serves: Prometheus metrics for every protocol (the lean
 * unary path included), certificate issuance, rate-limit refusals, the event bus, the runtime;
 * and the request log's fields. One server for the file.
 */
import { create } from "@bufbuild/protobuf";
import {
  AuthService,
  CertificateKeyType,
  CertificateService,
  Health,
  ServerReflection,
  ServerReflectionRequestSchema,
  HealthCheckResponse_ServingStatus as Status,
  WorkspaceService,
} from "@wap/api";
import { bearer, clientFor, clientsFor, transportFor } from "@wap/test-kit/clients";
import { connectCall, restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { until } from "@wap/test-kit/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sshEd25519PublicKey } from "./support/ssh-keys.js";

/** One sample line of the exposition: name, labels, value. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function sampleSum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

describe("diagnostics", () => {
  let server: TestServer;
  let diagnostics: string;
  /** Signed in by the counting test, reused by the log test. */
  let userToken = "";
  const scrape = async () => {
    const response = await fetch(`${diagnostics}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    return { text: await response.text() };
  };

  beforeAll(async () => {
    server = await startTestServer({
      diagnosticsAddress: "127.0.0.1:0",
      // Anonymous clients (by address) get five requests per window: the sixth is refused and counted.
      rateLimit: { anonymousPoints: 5, authenticatedPoints: 0 },
      trustProxyHops: 1,
    });
    diagnostics = server.diagnosticsUrl!;
  });
  afterAll(async () => {
    await server.close();
  });

  it("is off unless configured: the public port serves no /metrics", async () => {
    expect(diagnostics).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The public port may answer the console's page there, never the metrics.
    const response = await fetch(`${server.url}/metrics`);
    expect(response.headers.get("content-type") ?? "").not.toContain("text/plain");
    expect(await response.text()).not.toContain("wap_rpc_requests_total");
  });

  it("answers /healthz and /readyz, and refuses other paths and methods", async () => {
    expect(await (await fetch(`${diagnostics}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${diagnostics}/readyz`)).json()).toEqual({ status: "ready" });
    expect((await fetch(`${diagnostics}/other`)).status).toBe(404);
    expect((await fetch(`${diagnostics}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("counts requests by RPC, protocol and code on every path, issuances, and rate-limit refusals", async () => {
    const email = "metrics@example.com";
    const password = "correct horse battery staple";
    const h2 = clientsFor(transportFor("connect-binary-h2", server.url), {
      auth: AuthService,
      workspaces: WorkspaceService,
      cas: CertificateService,
    });
    const grpc = clientsFor(transportFor("grpc-h2", server.url), { cas: CertificateService });
    await h2.auth.register({ name: "Metrics", email, username: "metrics", password });
    const { accessToken } = await h2.auth.login({ email, password });
    userToken = accessToken;
    // An anonymous client of its own (behind the trusted proxy) spends its budget of five...
    const proxied = { headers: { "x-forwarded-for": "203.0.113.7" } };
    for (let i = 0; i < 5; i++)
      expect((await restCall(server.url, "GET", "/v1/whoami", undefined, proxied)).status).toBe(401);
    // ...so its sixth request is refused, and counted as such.
    expect((await restCall(server.url, "GET", "/v1/whoami", undefined, proxied)).status).toBe(429);

    const auth = bearer(accessToken);
    const { workspace } = await h2.workspaces.createWorkspace({ name: "Metrics" }, auth);
    const workspaceId = workspace!.id;
    const { certificateAuthority } = await h2.cas.createCertificateAuthority(
      { workspaceId, name: "ssh", keyType: CertificateKeyType.ED25519 },
      auth,
    );
    // The lean unary path (Connect JSON over HTTP/1.1), connect-node (gRPC) and REST.
    const signed = await connectCall(
      server.url,
      "platform.v1.CertificateService/SignSSHCertificate",
      { workspaceId, caId: certificateAuthority!.id, publicKey: sshEd25519PublicKey() },
      { token: accessToken },
    );
    expect(signed.status).toBe(200);
    await grpc.cas.signSSHCertificate(
      { workspaceId, caId: certificateAuthority!.id, publicKey: sshEd25519PublicKey() },
      auth,
    );
    const notFound = await restCall(
      server.url,
      "GET",
      `/v1/workspaces/${workspaceId}/certificate_authorities/00000000-0000-4000-8000-000000000001`,
      undefined,
      {
        token: accessToken,
      },
    );
    expect(notFound.status).toBe(404);

    const sign = "/platform.v1.CertificateService/SignSSHCertificate";
    // A request is counted when its response closes, which may be just after the client read it.
    let samples: Sample[] = [];
    await until(async () => {
      samples = parseSamples((await scrape()).text);
      return sampleSum(samples, "wap_rpc_requests_total", { rpc: sign }) >= 2;
    });
    expect(sampleSum(samples, "wap_rpc_requests_total", { rpc: sign, protocol: "connect", code: "ok" })).toBe(
      1,
    );
    expect(sampleSum(samples, "wap_rpc_requests_total", { rpc: sign, protocol: "grpc", code: "ok" })).toBe(1);
    expect(
      sampleSum(samples, "wap_rpc_requests_total", {
        rpc: "/platform.v1.UserService/Whoami",
        protocol: "rest",
        code: "resource_exhausted",
      }),
    ).toBe(1);
    expect(
      sampleSum(samples, "wap_rpc_requests_total", {
        rpc: "/platform.v1.CertificateService/GetCertificateAuthority",
        protocol: "rest",
        code: "not_found",
      }),
    ).toBe(1);
    expect(
      sampleSum(samples, "wap_rpc_request_duration_seconds_count", { rpc: sign, protocol: "connect" }),
    ).toBe(1);
    expect(
      sampleSum(samples, "wap_certificates_issued_total", { kind: "ssh_user", ca_key_type: "ed25519" }),
    ).toBe(2);
    expect(sampleSum(samples, "wap_rate_limit_refusals_total", { caller: "anonymous" })).toBe(1);
  });

  it("labels health and reflection calls with the protocol they spoke, and never an unknown procedure", async () => {
    const check = "/grpc.health.v1.Health/Check";
    const reflect = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    // Each protocol from an address of its own (behind the trusted proxy): anonymous budgets are small.
    const from = (address: string) => ({ headers: { "x-forwarded-for": address } });
    const protocols = [
      ["grpc-h2", "grpc"],
      ["grpc-web-h1", "grpc_web"],
      ["connect-json-h1", "connect"],
    ] as const;
    for (const [i, [protocol]] of protocols.entries()) {
      const health = clientFor(Health, transportFor(protocol, server.url));
      expect((await health.check({ service: "" }, from(`198.51.100.${i + 1}`))).status).toBe(Status.SERVING);
    }
    const reflection = clientFor(ServerReflection, transportFor("grpc-h2", server.url));
    async function* listServices() {
      yield create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } });
    }
    for await (const answer of reflection.serverReflectionInfo(listServices(), from("198.51.100.9"))) {
      expect(answer.messageResponse.case).toBe("listServicesResponse");
    }
    const unknown = await connectCall(
      server.url,
      "platform.v1.NoSuchService/Nothing",
      {},
      from("198.51.100.10"),
    );
    expect(unknown.status).toBe(404);

    let samples: Sample[] = [];
    await until(async () => {
      samples = parseSamples((await scrape()).text);
      return (
        sampleSum(samples, "wap_rpc_requests_total", { rpc: check }) >= protocols.length &&
        sampleSum(samples, "wap_rpc_requests_total", { rpc: reflect }) >= 1
      );
    });
    for (const [, label] of protocols) {
      expect(
        sampleSum(samples, "wap_rpc_requests_total", { rpc: check, protocol: label, code: "ok" }),
        label,
      ).toBe(1);
    }
    expect(sampleSum(samples, "wap_rpc_requests_total", { rpc: reflect, protocol: "grpc", code: "ok" })).toBe(
      1,
    );
    expect(sampleSum(samples, "wap_rpc_requests_total", { rpc: check, protocol: "rest" })).toBe(0);
    // A path the client chose is never a label: unknown procedures count under "none".
    expect(samples.some((s) => s.labels.rpc?.includes("NoSuchService"))).toBe(false);
    expect(
      sampleSum(samples, "wap_rpc_requests_total", {
        rpc: "none",
        protocol: "connect",
        code: "unimplemented",
      }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("reports live counts, the event loop, and the event bus's lag", async () => {
    let samples: Sample[] = [];
    // The first lag probe goes out at start; wait until it has been received.
    await until(async () => {
      samples = parseSamples((await scrape()).text);
      return sampleSum(samples, "wap_event_bus_lag_seconds_count") >= 1;
    });
    expect(samples.some((s) => s.name === "wap_daemon_control_streams_open" && s.value === 0)).toBe(true);
    expect(samples.some((s) => s.name === "wap_terminal_sessions_open" && s.value === 0)).toBe(true);
    expect(samples.some((s) => s.name === "wap_nodejs_eventloop_lag_p99_seconds")).toBe(true);
    // SQLite has no pool: the series are absent rather than zero.
    expect(samples.some((s) => s.name === "wap_database_pool_connections")).toBe(false);
  });

  it("follows Prometheus naming, and no label carries an id", async () => {
    const { text } = await scrape();
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1]!, type: m[2]! }));
    expect(types.length).toBeGreaterThan(10);
    for (const { name, type } of types) {
      expect(name).toMatch(/^wap_[a-z0-9_]+$/);
      if (type === "counter") expect(name).toMatch(/_total$/);
    }
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
    for (const sample of parseSamples(text)) {
      for (const value of Object.values(sample.labels)) expect(value).not.toMatch(uuid);
    }
  });

  it("logs each request with client address, user agent, subject, workspace and reason", async () => {
    const requestId = `log-check-${Date.now()}`;
    const absent = "00000000-0000-4000-8000-000000000000";
    await restCall(server.url, "GET", `/v1/workspaces/${absent}/certificate_authorities`, undefined, {
      token: userToken,
      headers: { "user-agent": "diagnostics-test/1.0", "x-request-id": requestId },
    });
    let line: Record<string, unknown> | undefined;
    await until(() => {
      line = server.logs
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.requestId === requestId);
      return line !== undefined;
    });
    expect(line).toMatchObject({
      msg: "request",
      client: "127.0.0.1",
      userAgent: "diagnostics-test/1.0",
      workspaceId: absent,
    });
    expect(line).toMatchObject({
      subject: "user",
      code: expect.stringMatching(/^(not_found|permission_denied)$/),
    });
    expect(line!.subjectId).toEqual(expect.any(String));
    expect(line!.reason).toEqual(expect.any(String));
  });
});

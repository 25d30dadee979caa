/**
 * Account state that must hold across server instances lives in PostgreSQL: two platforms over
 * one schema share CLI logins, device nonces and sign-in throttles.
 */
import { generateKeyPairSync, randomBytes, randomUUID, sign } from "node:crypto";
import { AuthService } from "@wap/api";
import { type Caller, createCallContext } from "@wap/core";
import { startCliLogin } from "@wap/core/internal";
import { describe, expect, it } from "vitest";
import { call, codeOf, twoInstancesOverOnePostgres } from "./support/two-instances.js";

const instances = twoInstancesOverOnePostgres({ publicBaseUrl: "https://app.example.test" });

const anonymous: Caller = { kind: "anonymous" };

async function signUp(name: string) {
  const email = `${name}-${randomUUID().slice(0, 8)}@example.com`;
  const password = "correct horse battery";
  await call(instances.b, anonymous, AuthService.method.register, {
    name: `${name} Test`,
    email,
    username: `${name}${randomBytes(3).toString("hex")}`,
    password,
  });
  const tokens = (await call(instances.b, anonymous, AuthService.method.login, {
    email,
    password,
  })) as unknown as {
    accessToken: string;
  };
  const { caller } = await instances.b.authenticate({ bearer: tokens.accessToken });
  return { caller, email, password };
}

describe("accounts across two instances (PostgreSQL)", () => {
  it("a CLI login waiting on one instance is approved on the other; a nonce works once on either", async () => {
    const ada = await signUp("ada");
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const deviceId = randomUUID();
    const pending = await startCliLogin(instances.a.services, createCallContext(anonymous), {
      authMethod: "soft",
      authPubkey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      deviceId,
    });
    // Woken by the event bus across instances: the stream never polls.
    const approval = pending.waitForApproval();
    const code = new URL(pending.verificationUrl).searchParams.get("code")!;
    await call(instances.b, ada.caller, AuthService.method.verifyCLILogin, {
      loginCode: code,
      userCode: pending.userCode,
    });
    expect((await approval).email).toBe(ada.email);

    const procedure = "/platform.v1.UserService/Whoami";
    const signed = `${deviceId}:${Math.floor(Date.now() / 1000)}:${randomBytes(12).toString("hex")}:${procedure}`;
    const signature = sign("sha256", Buffer.from(signed), { key: privateKey, dsaEncoding: "der" });
    const value = `${signed}:${signature.toString("base64url")}`;
    const { caller } = await instances.a.authenticate({ platformChallenge: { value, procedure } });
    expect(caller).toMatchObject({
      kind: "user",
      userId: ada.caller.kind === "user" ? ada.caller.userId : "",
    });
    expect(await codeOf(instances.b.authenticate({ platformChallenge: { value, procedure } }))).toBe(
      "unauthenticated",
    );
  });

  it("failed sign-ins on one instance throttle the account on the other", async () => {
    const ada = await signUp("bob");
    for (let i = 0; i < 5; i++) {
      const platform = i % 2 === 0 ? instances.a : instances.b;
      expect(
        await codeOf(
          call(platform, anonymous, AuthService.method.login, { email: ada.email, password: `no ${i}` }),
        ),
      ).toBe("unauthenticated");
    }
    for (const platform of [instances.a, instances.b]) {
      expect(
        await codeOf(
          call(platform, anonymous, AuthService.method.login, { email: ada.email, password: ada.password }),
        ),
      ).toBe("resource_exhausted");
    }
  });
});

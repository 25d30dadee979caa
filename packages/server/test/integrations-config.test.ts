/**
 * The Stripe and licence settings: parsed from WAP_* variables and flags, listed in --help,
 * checked without repeating secrets, and turned into the platform's billing provider and licence.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signLicense } from "@wap/core";
import { restCall, signUpWithWorkspace } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ConfigError,
  createServer,
  helpText,
  parseConfig,
  StartupError,
  silentLogger,
} from "../src/index.js";

const stripeEnv = {
  WAP_STRIPE_SECRET_KEY: "sk_test_config_secret",
  WAP_STRIPE_WEBHOOK_SECRET: "whsec_config_secret",
  WAP_STRIPE_PRICE_ID: "price_team",
};

describe("integration settings", () => {
  it("reads the Stripe and licence settings from the environment and flags", () => {
    const { config } = parseConfig(["--license-file", "/etc/wap/licence", "--stripe-price-id=price_pro"], {
      ...stripeEnv,
      WAP_LICENSE_PUBLIC_KEY_FILE: "/etc/wap/licence.pub",
    });
    expect(config).toMatchObject({
      stripeSecretKey: "sk_test_config_secret",
      stripeWebhookSecret: "whsec_config_secret",
      stripePriceId: "price_pro",
      licenseFile: "/etc/wap/licence",
      licensePublicKeyFile: "/etc/wap/licence.pub",
    });
    expect(parseConfig([], {}).config.stripeSecretKey).toBeUndefined();
  });

  it("lists them in --help", () => {
    const help = helpText();
    for (const name of [
      "WAP_STRIPE_SECRET_KEY",
      "WAP_STRIPE_WEBHOOK_SECRET",
      "WAP_STRIPE_PRICE_ID",
      "WAP_LICENSE_FILE",
      "WAP_LICENSE_PUBLIC_KEY_FILE",
      "--stripe-secret-key",
      "--license-public-key-file",
    ]) {
      expect(help).toContain(name);
    }
  });

  it("wants all three Stripe settings or none, and never repeats a secret", () => {
    const attempt = (env: Record<string, string>) => {
      try {
        parseConfig([], env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      return undefined;
    };
    expect(attempt({ WAP_STRIPE_SECRET_KEY: stripeEnv.WAP_STRIPE_SECRET_KEY })).toMatch(
      /set WAP_STRIPE_WEBHOOK_SECRET and WAP_STRIPE_PRICE_ID/,
    );
    const swapped = attempt({
      ...stripeEnv,
      WAP_STRIPE_SECRET_KEY: "whsec_oops",
      WAP_STRIPE_WEBHOOK_SECRET: "sk_live_oops",
    });
    expect(swapped).toMatch(/WAP_STRIPE_SECRET_KEY must be a Stripe secret key/);
    expect(swapped).not.toContain("oops");
    expect(attempt({ ...stripeEnv, WAP_STRIPE_WEBHOOK_SECRET: "nope-secret" })).toMatch(/whsec_/);
    expect(attempt(stripeEnv)).toBeUndefined();
  });

  it("refuses half a Stripe configuration given to createServer too", async () => {
    const started = createServer({ port: 0, stripeSecretKey: "sk_test_x", logger: silentLogger });
    await expect(started).rejects.toBeInstanceOf(StartupError);
  });
});

describe("a server configured with Stripe and a licence", () => {
  let dir: string;
  let server: TestServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "wap-integrations-"));
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const expiresAt = new Date(Date.now() + 365 * 86_400_000);
    const token = signLicense(
      { id: "lic_http", licensee: "Acme", plan: "enterprise", issuedAt: new Date(), expiresAt },
      privateKey,
    );
    await writeFile(join(dir, "wap.license"), `# Acme\n${token}\n`);
    // An old key first: any key of the file may sign.
    const oldKey = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" });
    await writeFile(
      join(dir, "licence.pub"),
      `${oldKey}${publicKey.export({ type: "spki", format: "pem" })}`,
    );
    server = await startTestServer({
      stripeSecretKey: stripeEnv.WAP_STRIPE_SECRET_KEY,
      stripeWebhookSecret: stripeEnv.WAP_STRIPE_WEBHOOK_SECRET,
      stripePriceId: stripeEnv.WAP_STRIPE_PRICE_ID,
      licenseFile: join(dir, "wap.license"),
      licensePublicKeyFile: join(dir, "licence.pub"),
    });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("has billing on and the licence's plan; no secret reaches the log", async () => {
    const owner = await signUpWithWorkspace(server.url, "licensed");
    const billing = await restCall(
      server.url,
      "GET",
      `/v1/billing/subscription?workspaceId=${owner.workspaceId}`,
      undefined,
      { token: owner.accessToken },
    );
    expect(billing.body.billingEnabled).toBe(true);
    const license = await restCall(server.url, "GET", "/v1/license", undefined, { token: owner.accessToken });
    expect(license.body).toMatchObject({ plan: "enterprise", active: true });
    const logs = server.logs.join("");
    expect(logs).toContain('"provider":"stripe"');
    expect(logs).toContain('"plan":"enterprise"');
    expect(logs).not.toContain(stripeEnv.WAP_STRIPE_SECRET_KEY);
    expect(logs).not.toContain(stripeEnv.WAP_STRIPE_WEBHOOK_SECRET);
  });

  it("starts on the free plan, with a warning, when the licence file cannot be read", async () => {
    const other = await startTestServer({ licenseFile: join(dir, "missing.license") });
    try {
      const owner = await signUpWithWorkspace(other.url, "unlicensed");
      const license = await restCall(other.url, "GET", "/v1/license", undefined, {
        token: owner.accessToken,
      });
      expect(license.body).toMatchObject({ plan: "free", active: true });
      expect(other.logs.some((l) => l.includes('"level":"warn"') && l.includes("licence file"))).toBe(true);
    } finally {
      await other.close();
    }
  });
});

/**
 * The server settings of the enterprise integrations (Stripe billing, the offline licence), and
 * the `IntegrationServices` they make for the platform.
 *
 * `config.ts` spreads {@link integrationSettings} into its table (so they show in `--help`) and
 * {@link defaultIntegrationConfig} into its defaults. Secrets (the Stripe keys) never reach a log
 * or an error message.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { createStripeBillingProvider, inspectLicense, type LicenseOptions } from "@wap/core";
import type { IntegrationServices } from "@wap/core/internal";
import type { Logger } from "./logger.js";
import { StartupError } from "./startup-error.js";

export interface IntegrationConfig {
  /** Stripe secret API key; with the webhook secret and the price, billing is on. */
  readonly stripeSecretKey: string | undefined;
  /** Signing secret of the Stripe webhook endpoint (`<public URL>/v1/billing/webhook`). */
  readonly stripeWebhookSecret: string | undefined;
  /** The Stripe price a checkout subscribes a workspace to. */
  readonly stripePriceId: string | undefined;
  /** The offline licence file (docs/licence.md); unset means the free plan. */
  readonly licenseFile: string | undefined;
  /** PEM file of the Ed25519 public key(s) whose licence signatures are trusted. */
  readonly licensePublicKeyFile: string | undefined;
}

export const defaultIntegrationConfig: IntegrationConfig = {
  stripeSecretKey: undefined,
  stripeWebhookSecret: undefined,
  stripePriceId: undefined,
  licenseFile: undefined,
  licensePublicKeyFile: undefined,
};

type MutableIntegrationConfig = { -readonly [K in keyof IntegrationConfig]: IntegrationConfig[K] };

/** Rows of the settings table in `config.ts` (same shape; values are checked by {@link integrationConfigProblem}). */
export interface IntegrationSetting {
  readonly env: string;
  readonly flag: string;
  readonly value: string;
  readonly defaultText: string;
  readonly help: string;
  apply(config: MutableIntegrationConfig, text: string): void;
}

/** The `apply` of a setting whose text is kept as given under `key`. */
function setsText(key: keyof IntegrationConfig): IntegrationSetting["apply"] {
  return (config, text) => {
    config[key] = text;
  };
}

export const integrationSettings: readonly IntegrationSetting[] = [
  {
    env: "WAP_STRIPE_SECRET_KEY",
    flag: "--stripe-secret-key",
    value: "<key>",
    defaultText: "none: billing disabled (self-hosted)",
    help: "Stripe secret API key (sk_live_..., sk_test_... or a restricted rk_ key). With --stripe-webhook-secret and --stripe-price-id it turns billing on. Prefer the env var: flags show in `ps`.",
    apply: setsText("stripeSecretKey"),
  },
  {
    env: "WAP_STRIPE_WEBHOOK_SECRET",
    flag: "--stripe-webhook-secret",
    value: "<secret>",
    defaultText: "none",
    help: "Signing secret (whsec_...) of the Stripe webhook endpoint <public URL>/v1/billing/webhook. Prefer the env var.",
    apply: setsText("stripeWebhookSecret"),
  },
  {
    env: "WAP_STRIPE_PRICE_ID",
    flag: "--stripe-price-id",
    value: "<id>",
    defaultText: "none",
    help: "The Stripe price (price_...) a checkout subscribes a workspace to.",
    apply: setsText("stripePriceId"),
  },
  {
    env: "WAP_LICENSE_FILE",
    flag: "--license-file",
    value: "<file>",
    defaultText: "none: the free self-hosted plan",
    help: "Offline licence file (docs/licence.md), read at start; needs --license-public-key-file. A bad licence is logged, never fatal.",
    apply: setsText("licenseFile"),
  },
  {
    env: "WAP_LICENSE_PUBLIC_KEY_FILE",
    flag: "--license-public-key-file",
    value: "<file>",
    defaultText: "none",
    help: "PEM file with the Ed25519 public key(s) (SPKI) whose licence signatures are trusted; several keys may follow each other.",
    apply: setsText("licensePublicKeyFile"),
  },
];

const stripeSettings = [
  ["stripeSecretKey", "WAP_STRIPE_SECRET_KEY"],
  ["stripeWebhookSecret", "WAP_STRIPE_WEBHOOK_SECRET"],
  ["stripePriceId", "WAP_STRIPE_PRICE_ID"],
] as const;

/**
 * What is wrong with the integration settings, or undefined. Messages name the setting, never
 * its value (they are secrets).
 */
export function integrationConfigProblem(config: IntegrationConfig): string | undefined {
  const missing = stripeSettings.filter(([key]) => !config[key]).map(([, env]) => env);
  if (missing.length > 0 && missing.length < stripeSettings.length) {
    return `Stripe billing needs WAP_STRIPE_SECRET_KEY, WAP_STRIPE_WEBHOOK_SECRET and WAP_STRIPE_PRICE_ID together: set ${missing.join(" and ")} (or none of them)`;
  }
  if (missing.length > 0) return undefined;
  // Swapped values are the usual mistake: both are long random strings.
  if (!/^(sk|rk)_(test|live)_\S+$/.test(config.stripeSecretKey!)) {
    return "WAP_STRIPE_SECRET_KEY must be a Stripe secret key (sk_live_..., sk_test_... or rk_...)";
  }
  if (!/^whsec_\S+$/.test(config.stripeWebhookSecret!)) {
    return "WAP_STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_...)";
  }
  if (/\s/.test(config.stripePriceId!)) return "WAP_STRIPE_PRICE_ID must be a price id (price_...)";
  return undefined;
}

/** Each PEM block of a key file: several trusted keys may follow each other (key rotation). */
function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN [A-Z ]+-----[\s\S]*?-----END [A-Z ]+-----/g) ?? [];
}

async function readLicense(config: IntegrationConfig, logger: Logger): Promise<LicenseOptions | undefined> {
  if (config.licenseFile === undefined) return undefined;
  // Never fatal (docs/licence.md): an unreadable file is reported and the free plan applies.
  const read = (file: string, what: string) =>
    readFile(file, "utf8").catch((error: unknown) => {
      logger.warn(`cannot read the ${what}; running on the free plan`, {
        file,
        error: error instanceof Error ? error.message : String(error),
      });
      return undefined;
    });
  const license = await read(config.licenseFile, "licence file");
  if (license === undefined) return undefined;
  const keys =
    config.licensePublicKeyFile === undefined
      ? ""
      : await read(config.licensePublicKeyFile, "licence public key file");
  const options: LicenseOptions = { license, publicKeys: pemBlocks(keys ?? "") };
  const status = inspectLicense(options, new Date());
  if (status.state === "valid") {
    logger.info("licence", { plan: status.plan, id: status.license.id, expiresAt: status.license.expiresAt });
  } else if (status.state === "expired") {
    logger.warn("the licence has expired", { plan: status.plan, expiresAt: status.license.expiresAt });
  } else if (status.state === "invalid") {
    logger.warn("the licence is not valid; GetLicense reports plan 'invalid'", { reason: status.reason });
  }
  return options;
}

/**
 * The integration services the settings ask for: the Stripe provider and the licence. Throws
 * StartupError for inconsistent settings (createServer may get them without parseConfig).
 */
export async function loadIntegrations(
  config: IntegrationConfig,
  logger: Logger,
): Promise<IntegrationServices> {
  const problem = integrationConfigProblem(config);
  if (problem !== undefined) throw new StartupError(problem);
  const license = await readLicense(config, logger);
  const stripe =
    config.stripeSecretKey && config.stripeWebhookSecret && config.stripePriceId
      ? createStripeBillingProvider({
          secretKey: config.stripeSecretKey,
          webhookSecret: config.stripeWebhookSecret,
          priceId: config.stripePriceId,
        })
      : undefined;
  logger.info(
    "billing",
    stripe ? { provider: "stripe", priceId: config.stripePriceId } : { provider: "none" },
  );
  return { ...(stripe && { billing: stripe }), ...(license && { license }) };
}

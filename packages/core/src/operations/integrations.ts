/**
 * The optional services of the enterprise features: the billing provider, the instance licence,
 * how SSO reaches identity providers, and the audit export limits. Each is absent by default
 * and has a documented default behaviour.
 *
 * `Services` and `PlatformOptions` gain these fields with `extends IntegrationServices`; until
 * then they are read structurally, so an embedding application (or a test) can already set them
 * on `platform.services`.
 *
 * @module
 */
import type { AuditExportOptions } from "../audit/export.js";
import type { BillingProvider } from "../billing/provider.js";
import type { LicenseOptions } from "../license/license.js";
import type { SsoOptions } from "../sso/options.js";
import type { WebhookOptions } from "../webhooks/options.js";
import type { Services } from "./services.js";

export interface IntegrationServices {
  /** Checkout, portal, cancellation and webhooks. Default: billing disabled (self-hosted). */
  readonly billing?: BillingProvider;
  /** The instance's licence file and the keys that sign licences. Default: none (free plan). */
  readonly license?: LicenseOptions;
  /** Public URLs, fetch and timeouts of single sign-on. */
  readonly sso?: SsoOptions;
  /** Size limits of ExportAuditLogs. */
  readonly auditExport?: AuditExportOptions;
  /** Which networks and schemes endpoints may use, retries, timeouts; whether this instance delivers. */
  readonly webhooks?: WebhookOptions;
}

const keys = ["billing", "license", "sso", "auditExport", "webhooks"] as const;

/** The integration services of a platform (each may be absent). */
export function integrationsOf(services: Services): IntegrationServices {
  return services as Services & IntegrationServices;
}

/** The integration fields set in `options`, to spread into `Services` (`...pickIntegrations(options)`). */
export function pickIntegrations(options: IntegrationServices): IntegrationServices {
  const picked: Record<string, unknown> = {};
  for (const key of keys) if (options[key] !== undefined) picked[key] = options[key];
  return picked as IntegrationServices;
}

/**
 * How webhooks are delivered (`PlatformOptions.webhooks`); every field has a default.
 *
 * @module
 */

export interface WebhookOptions {
  /**
   * Networks (CIDR or single addresses) that endpoints may be at although they are not public,
   * as for every outbound request. Default none: loopback, private and link-local are refused.
   */
  readonly allowNetworks?: readonly string[];
  /** Whether endpoints may be plain `http:` URLs. Default false: https only. */
  readonly allowHttp?: boolean;
  /** The first retry's wait; each failure doubles it (with jitter). Default 5 s. */
  readonly retryBaseMs?: number;
  /** The longest wait between attempts. Default 10 min. */
  readonly retryMaxMs?: number;
  /** Time for one request, connection and answer included. Default 10 s. */
  readonly requestTimeoutMs?: number;
  /** An endpoint failing for this long is disabled (and the change audited). Default 3 days. */
  readonly disableAfterMs?: number;
  /** How often an instance looks for endpoints with work (changes on this instance wake it at once). Default 1 s. */
  readonly pollMs?: number;
  /** How long an instance holds an endpoint between renewals. Default 60 s. */
  readonly leaseMs?: number;
  /** Events read and sent per round. Default 200. */
  readonly batchSize?: number;
  /** Whether this platform delivers at all. Default true. */
  readonly deliver?: boolean;
  /** Told when a round of delivery fails (storage unreachable); the next round tries again. Default: ignore. */
  readonly onError?: (error: unknown) => void;
}

export interface WebhookSettings {
  readonly allowNetworks: readonly string[];
  readonly allowHttp: boolean;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly requestTimeoutMs: number;
  readonly disableAfterMs: number;
  readonly pollMs: number;
  readonly leaseMs: number;
  readonly batchSize: number;
  readonly deliver: boolean;
  readonly onError: (error: unknown) => void;
}

export const defaultWebhookSettings: WebhookSettings = {
  allowNetworks: [],
  allowHttp: false,
  retryBaseMs: 5_000,
  retryMaxMs: 10 * 60_000,
  requestTimeoutMs: 10_000,
  disableAfterMs: 3 * 24 * 3600_000,
  pollMs: 1_000,
  leaseMs: 60_000,
  batchSize: 200,
  deliver: true,
  onError: () => undefined,
};

/** Largest answer read from a receiver (the body is not used; it is read to finish the exchange). */
export const maxReceiverAnswerBytes = 64 * 1024;

/** Attempts kept per endpoint: those of its last this many events. */
export const keptDeliveries = 1000;

export function webhookSettings(options: WebhookOptions | undefined): WebhookSettings {
  const set = Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined));
  return { ...defaultWebhookSettings, ...set };
}

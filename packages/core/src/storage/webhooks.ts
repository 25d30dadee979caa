/**
 * Webhook endpoints of a workspace, their signing secrets (sealed) and the attempts made to
 * deliver to them (`webhook_endpoints`, `webhook_secrets`, `webhook_deliveries`).
 *
 * The outbox an endpoint is fed from is the workspace's audit hash chain: every entry is written
 * in the transaction of the change it records and has a position with no gaps. An endpoint keeps
 * the position up to which it has been served (`cursor`); the worker that holds its lease sends
 * the entries after it, in order.
 *
 * @module
 */
import type { Page, PageRequest } from "./common.js";

/** Why an endpoint is not delivered to: by an admin, or by the server after failing too long. */
export type WebhookDisabledReason = "" | "admin" | "failing";

/** What an admin sets. */
export interface WebhookSettings {
  readonly url: string;
  readonly description: string;
  /** Audit actions (`team.create`) or prefixes (`team.*`); empty: every event. */
  readonly eventTypes: readonly string[];
  readonly enabled: boolean;
  readonly disabledReason: WebhookDisabledReason;
}

/** Where delivery stands. */
export interface WebhookDeliveryState {
  /** The chain position of the last event sent (or passed over by the filter). */
  readonly cursor: number;
  /** Failed attempts at the event after the cursor. */
  readonly attempts: number;
  /** When the next attempt may run; null: at once. */
  readonly nextAttemptAt: Date | null;
  /** The first failure of the current run of failures; null while deliveries succeed. */
  readonly failingSince: Date | null;
  readonly lastError: string;
  readonly lastSuccessAt: Date | null;
}

export interface WebhookEndpointRecord extends WebhookSettings, WebhookDeliveryState {
  readonly id: string;
  readonly workspaceId: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A signing secret of an endpoint; sealed under `webhook-secret:<endpointId>:<version>`. */
export interface WebhookSecretRecord {
  readonly endpointId: string;
  readonly workspaceId: string;
  /** 1 for the first, one more for each rotation. */
  readonly version: number;
  readonly sealed: Uint8Array;
  readonly createdAt: Date;
  /** A replaced secret keeps signing until then (the rotation's overlap); null: the current one. */
  readonly expiresAt: Date | null;
}

/** One attempt to deliver one event. */
export interface WebhookDeliveryRecord {
  readonly id: string;
  readonly endpointId: string;
  readonly workspaceId: string;
  /** The audit entry's id: the `webhook-id`, the same on every attempt. */
  readonly eventId: string;
  /** Its chain position. */
  readonly sequence: number;
  readonly eventType: string;
  /** 1 for the first attempt at this event. */
  readonly attempt: number;
  readonly attemptedAt: Date;
  readonly durationMs: number;
  readonly succeeded: boolean;
  /** The receiver's HTTP status, 0 when none came. */
  readonly httpStatus: number;
  readonly error: string;
}

/** What one round of a worker leaves behind, written only while it still holds the lease. */
export interface WebhookProgress {
  /** The cursor the round started from: a round overtaken by a replay writes nothing. */
  readonly from: number;
  readonly state: WebhookDeliveryState;
  readonly deliveries: readonly WebhookDeliveryRecord[];
  /** Set when the server disables an endpoint that failed too long. */
  readonly disable?: true;
  /** Deliveries kept per endpoint: older ones (by sequence) go. */
  readonly keepDeliveries: number;
}

export interface WebhookEndpointRepository {
  /** Stores a new endpoint with its first secret. */
  insert(endpoint: WebhookEndpointRecord, secret: WebhookSecretRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<WebhookEndpointRecord | null>;
  /** Oldest first. */
  list(workspaceId: string, page: PageRequest): Promise<Page<WebhookEndpointRecord>>;
  /**
   * Replaces the settings. Enabling an endpoint, or changing its URL, clears its run of failures
   * (delivery resumes after its cursor, at once). Returns the endpoint, or null when it is not there.
   */
  updateSettings(
    workspaceId: string,
    id: string,
    settings: WebhookSettings,
    at: Date,
  ): Promise<WebhookEndpointRecord | null>;
  /** Moves the cursor (a replay) and clears the failures. False when the endpoint is not there. */
  setCursor(workspaceId: string, id: string, cursor: number, at: Date): Promise<boolean>;
  delete(workspaceId: string, id: string): Promise<boolean>;

  /** The secrets of an endpoint that still sign at `at`, newest first. */
  secrets(workspaceId: string, endpointId: string, at: Date): Promise<WebhookSecretRecord[]>;
  /**
   * Adds a secret as the current one; the current one so far signs until `previousUntil`, and
   * secrets already expired go. False when the endpoint is not there.
   */
  rotateSecret(secret: WebhookSecretRecord, previousUntil: Date): Promise<boolean>;

  /**
   * Endpoints that have work at `at`: enabled, behind their workspace's chain head, due, and whose
   * lease is free or lapsed (or is `owner`'s). At most `limit`, the longest waiting first.
   */
  due(at: Date, owner: string, limit: number): Promise<WebhookEndpointRecord[]>;
  /**
   * Takes (or renews) the lease of an endpoint until `until` when it is free, lapsed at `at`, or
   * `owner`'s already. Returns the endpoint as it stands, or null when another holds it.
   */
  claim(id: string, owner: string, at: Date, until: Date): Promise<WebhookEndpointRecord | null>;
  /** Lets the lease go (when `owner` holds it). */
  release(id: string, owner: string): Promise<void>;
  /**
   * Records a round's outcome, in one transaction, only while `owner` holds the lease and the
   * cursor is still where the round started: returns false (and writes nothing) otherwise.
   */
  saveProgress(id: string, owner: string, progress: WebhookProgress): Promise<boolean>;
  /** Newest first. */
  listDeliveries(
    workspaceId: string,
    endpointId: string,
    page: PageRequest,
  ): Promise<Page<WebhookDeliveryRecord>>;
}

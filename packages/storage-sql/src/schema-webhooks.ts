/**
 * The webhook tables (019_webhooks).
 *
 * @module
 */
import type {
  BigIntColumn,
  BytesColumn,
  FlagColumn,
  JsonColumn,
  MillisColumn,
  NullableMillisColumn,
} from "./schema.js";

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  url: string;
  description: string;
  /** Audit actions or prefixes, JSON. */
  event_types: JsonColumn;
  enabled: FlagColumn;
  disabled_reason: string;
  created_at: MillisColumn;
  updated_at: MillisColumn;
  cursor: BigIntColumn;
  attempts: number;
  next_attempt_at: NullableMillisColumn;
  failing_since: NullableMillisColumn;
  last_error: string;
  last_success_at: NullableMillisColumn;
  lease_owner: string | null;
  lease_until: NullableMillisColumn;
}

export interface WebhookSecretsTable {
  workspace_id: string;
  endpoint_id: string;
  version: number;
  sealed: BytesColumn;
  created_at: MillisColumn;
  expires_at: NullableMillisColumn;
}

export interface WebhookDeliveriesTable {
  id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  sequence: BigIntColumn;
  attempt: number;
  attempted_at: MillisColumn;
  duration_ms: number;
  succeeded: FlagColumn;
  http_status: number;
  error: string;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

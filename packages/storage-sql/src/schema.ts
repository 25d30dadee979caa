/**
 * The tables as Kysely sees them. Column names are snake_case; the mapping layer turns rows into
 * the port's records.
 *
 * @module
 */
import type { ColumnType } from "kysely";
import type { AccountTables } from "./schema-accounts.js";
import type { DaemonProtocolColumns, DaemonTables } from "./schema-daemons.js";
import type { RecordingTables } from "./schema-recordings.js";
import type { SsoBillingTables } from "./schema-sso-billing.js";
import type { WebhookTables } from "./schema-webhooks.js";
import type { WorkspaceAccessTables } from "./schema-workspace-access.js";

/** Epoch milliseconds in a 64-bit column. pg returns int8 as a string; the mapping layer parses it. */
export type MillisColumn = ColumnType<number | string | bigint, number, number>;
export type NullableMillisColumn = ColumnType<number | string | bigint | null, number | null, number | null>;
/** A 64-bit integer that is not a time (durations in seconds). */
export type BigIntColumn = ColumnType<number | string | bigint, number, number>;
/** A boolean as 0/1: better-sqlite3 cannot bind JS booleans, so both dialects store integers. */
export type FlagColumn = ColumnType<number, 0 | 1, 0 | 1>;
/** Bytes (blob / bytea). Drivers return Buffers; the mapping layer copies them into Uint8Arrays. */
export type BytesColumn = ColumnType<Uint8Array, Uint8Array, Uint8Array>;
/** JSON text (arrays and string maps). */
export type JsonColumn = string;

export interface UsersTable {
  id: string;
  name: string;
  username: string;
  email: string;
  email_verified: FlagColumn;
  picture: string;
  password_hash: string | null;
  enable_email_recovery: FlagColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface AuthSessionsTable {
  id: string;
  user_id: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  revoked_at: NullableMillisColumn;
  ip_address: string;
  user_agent: string;
}

export interface RefreshTokensTable {
  id: string;
  session_id: string;
  token_hash: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  rotated_at: NullableMillisColumn;
}

export interface WorkspacesTable {
  id: string;
  name: string;
  description: string;
  created_by: string;
  enroll_auto_approve: FlagColumn;
  enroll_expires_at: NullableMillisColumn;
  invite_expires_at: NullableMillisColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface WorkspaceMembersTable {
  workspace_id: string;
  user_id: string;
  role: string;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface CertificateAuthoritiesTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  authority_type: string;
  key_type: string;
  key_bits: number;
  certificate: string;
  public_key: string;
  serial_number: string;
  subject: string;
  not_before: MillisColumn;
  not_after: MillisColumn;
  is_active: FlagColumn;
  is_default: FlagColumn;
  allowed_key_types: JsonColumn;
  lifetime_seconds: BigIntColumn;
  user_default_ttl_seconds: BigIntColumn;
  user_max_ttl_seconds: BigIntColumn;
  host_default_ttl_seconds: BigIntColumn;
  host_max_ttl_seconds: BigIntColumn;
  user_extensions: JsonColumn;
  user_critical_options: JsonColumn;
  sealed_private_key: BytesColumn;
  key_version: number;
  key_storage: string;
  rotation_phase: string;
  /** JSON of the incoming key of a staged rotation; null outside one. */
  next_key: string | null;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface ServiceAccountsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** `name` case-folded by the query layer, for the portable case-insensitive `query` filter. */
  name_folded: string;
  description: string;
  description_folded: string;
  role: string;
  tags: JsonColumn;
  token_hash: string;
  expires_at: NullableMillisColumn;
  last_used_at: NullableMillisColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface DaemonsTable extends DaemonProtocolColumns {
  id: string;
  workspace_id: string;
  target_id: string | null;
  name: string;
  name_folded: string;
  status: string;
  record_sessions: FlagColumn;
  /** Migration 017. */
  require_recording: ColumnType<number, 0 | 1 | undefined, 0 | 1>;
  metadata: JsonColumn;
  auth_public_key: string;
  auth_method: string;
  online_since: NullableMillisColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface AuditEventsTable {
  /** Assigned by the database in append order; never written. */
  seq: ColumnType<number | string | bigint, never, never>;
  id: string;
  workspace_id: string | null;
  actor_id: string;
  actor_type: string;
  action: string;
  resource: string;
  ip_address: string;
  user_agent: string;
  status_code: string;
  request_id: string;
  occurred_at: MillisColumn;
  /** Set by the chain step at commit; null for events outside any workspace. */
  chain_position: ColumnType<number | string | bigint | null, number | null | undefined, number | null>;
  previous_hash: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  hash: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
}

/** The last entry of each workspace's audit chain, with the hash before it. */
export interface AuditChainHeadsTable {
  workspace_id: string;
  position: number | string | bigint;
  previous_hash: Uint8Array;
  hash: Uint8Array;
}

export interface AuditSigningKeysTable {
  workspace_id: string;
  public_key: Uint8Array;
  sealed_private_key: Uint8Array;
  created_at: MillisColumn;
}

export interface AuditCheckpointsTable {
  workspace_id: string;
  position: number | string | bigint;
  hash: Uint8Array;
  signed_at: MillisColumn;
  signature: Uint8Array;
}

export interface SecretsTable {
  name: string;
  sealed: BytesColumn;
  created_at: MillisColumn;
}

export interface TargetsTable {
  id: string;
  workspace_id: string;
  ca_id: string;
  daemon_id: string | null;
  name: string;
  name_folded: string;
  description: string;
  tags: JsonColumn;
  endpoints: JsonColumn;
  /** 013_reported_endpoints. */
  reported_endpoints: JsonColumn;
  metadata: JsonColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface IssuedCertificatesTable {
  id: string;
  workspace_id: string;
  ca_id: string;
  ca_key_version: number;
  kind: string;
  serial: string;
  key_fingerprint: string;
  principals: JsonColumn;
  valid_after: MillisColumn;
  valid_before: MillisColumn;
  requester_type: string;
  requester_id: string;
  target_id: string | null;
  key_id: string;
  created_at: MillisColumn;
  revoked_at: NullableMillisColumn;
  revocation_reason: string | null;
  revoked_by: string | null;
  /** SSH user certificates signed under a grant with limits: what it carries, as JSON. */
  limits: string | null;
  /** 1 for single-use certificates. */
  single_use: number;
  /** The step-up it was signed under; null for others. */
  step_up_id: string | null;
}

export interface CertificateAuthorityKeysTable {
  workspace_id: string;
  ca_id: string;
  version: number;
  key_type: string;
  key_bits: number;
  public_key: string;
  certificate: string;
  serial_number: string;
  not_before: MillisColumn;
  not_after: MillisColumn;
  created_at: MillisColumn;
  retired_at: MillisColumn;
  trusted_until: MillisColumn;
}

/** Every table of the schema, for `Kysely<Database>`. */
export interface Database
  extends AccountTables,
    WorkspaceAccessTables,
    SsoBillingTables,
    DaemonTables,
    RecordingTables,
    WebhookTables {
  users: UsersTable;
  auth_sessions: AuthSessionsTable;
  refresh_tokens: RefreshTokensTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  certificate_authorities: CertificateAuthoritiesTable;
  service_accounts: ServiceAccountsTable;
  daemons: DaemonsTable;
  audit_events: AuditEventsTable;
  audit_chain_heads: AuditChainHeadsTable;
  audit_signing_keys: AuditSigningKeysTable;
  audit_checkpoints: AuditCheckpointsTable;
  secrets: SecretsTable;
  targets: TargetsTable;
  issued_certificates: IssuedCertificatesTable;
  certificate_authority_keys: CertificateAuthorityKeysTable;
}

/**
 * The daemon-protocol tables (migrations 006 and 007) as Kysely sees them; part of {@link Database}.
 * The columns 006 adds to `daemons` are in {@link DaemonProtocolColumns}.
 *
 * @module
 */
import type { ColumnType } from "kysely";
import type { BigIntColumn, FlagColumn, MillisColumn, NullableMillisColumn } from "./schema.js";

/** Columns 006 adds to `daemons`; each has a default, so inserts may leave them out. */
export interface DaemonProtocolColumns {
  /** Which server instance and stream holds the control stream; null when offline. */
  online_holder: ColumnType<string | null, string | null | undefined, string | null>;
  reported_users: ColumnType<string, string | undefined, string>;
  sent_principals: ColumnType<string, string | undefined, string>;
  synced_at: ColumnType<number | string | bigint | null, number | null | undefined, number | null>;
}

export interface DaemonEnrollTokensTable {
  workspace_id: string;
  token_hash: string;
  created_by: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
}

export interface DaemonSessionsTable {
  id: string;
  workspace_id: string;
  daemon_id: string;
  user_id: string;
  username: string;
  state: string;
  created_at: MillisColumn;
  opened_at: NullableMillisColumn;
  closed_at: NullableMillisColumn;
  close_reason: string;
  /** Migration 008: the instance relaying the open session, and its internal URL. */
  relay_instance: ColumnType<string | null, string | null | undefined, string | null>;
  relay_url: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An SSH login through sshd, registered by the daemon's agent (migration 017). */
export interface SshSessionsTable {
  id: string;
  workspace_id: string;
  daemon_id: string;
  subject_id: string;
  subject_type: string;
  username: string;
  ca_id: string;
  certificate_serial: string;
  key_id: string;
  client_address: string;
  kind: string;
  command: string;
  tty: FlagColumn;
  recorded: FlagColumn;
  started_at: MillisColumn;
  ended_at: NullableMillisColumn;
  exit_status: ColumnType<number | null, number | null, number | null>;
  bytes_in: BigIntColumn;
  bytes_out: BigIntColumn;
  ended_by: string;
  end_reason: string;
}

/** A server instance that may hold control streams, while its lease lasts (migration 007). */
export interface ServerInstancesTable {
  id: string;
  started_at: MillisColumn;
  lease_expires_at: MillisColumn;
}

/** The tables of migrations 006 and 007. */
export interface DaemonTables {
  daemon_enroll_tokens: DaemonEnrollTokensTable;
  daemon_sessions: DaemonSessionsTable;
  ssh_sessions: SshSessionsTable;
  server_instances: ServerInstancesTable;
}

/**
 * The daemon-protocol tables (migration 006) as Kysely sees them; part of {@link Database}.
 * The columns 006 adds to `daemons` are in {@link DaemonProtocolColumns}.
 *
 * @module
 */
import type { ColumnType } from "kysely";
import type { MillisColumn, NullableMillisColumn } from "./schema.js";

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
}

/** The tables of migration 006. */
export interface DaemonTables {
  daemon_enroll_tokens: DaemonEnrollTokensTable;
  daemon_sessions: DaemonSessionsTable;
}

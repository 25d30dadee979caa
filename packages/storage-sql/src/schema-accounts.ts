/**
 * The account tables (migrations 003 and 010) as Kysely sees them; part of {@link Database}.
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

export interface OneTimeTokensTable {
  id: string;
  purpose: string;
  token_hash: string;
  user_id: string | null;
  data: JsonColumn;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  consumed_at: NullableMillisColumn;
}

export interface PasskeysTable {
  id: string;
  user_id: string;
  name: string;
  public_key: BytesColumn;
  counter: BigIntColumn;
  transports: JsonColumn;
  device_type: string;
  backed_up: FlagColumn;
  created_at: MillisColumn;
  last_used_at: NullableMillisColumn;
}

export interface BackupCodesTable {
  id: string;
  user_id: string;
  code_hash: string;
  created_at: MillisColumn;
  used_at: NullableMillisColumn;
}

export interface UserDevicesTable {
  id: string;
  user_id: string;
  session_id: string;
  name: string;
  auth_method: string;
  public_key: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  last_used_at: NullableMillisColumn;
}

export interface CliLoginsTable {
  id: string;
  code_hash: string;
  device_id: string;
  device_name: string;
  auth_method: string;
  public_key: string;
  ip_address: string;
  user_agent: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  approved_by: string | null;
  approved_at: NullableMillisColumn;
  user_code_hash: string;
  code_failures: number;
  denied_at: NullableMillisColumn;
  client_os: string;
  client_version: string;
}

export interface LinkedAccountsTable {
  user_id: string;
  provider: string;
  provider_id: string;
  provider_email: string;
  provider_username: string;
  protocol: string;
  created_at: MillisColumn;
}

export interface LoginThrottlesTable {
  key: string;
  failures: number;
  last_failure_at: MillisColumn;
  previous_failure_at: NullableMillisColumn;
}

export interface RequestNoncesTable {
  signer: string;
  nonce: string;
  expires_at: MillisColumn;
}

/** A passkey step-up of SSH logins (020_ssh_step_ups). */
export interface SshStepUpsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  /** The logins it covers: JSON [{targetId, login}]. */
  targets: string;
  challenge: string;
  created_at: MillisColumn;
  expires_at: MillisColumn;
  completed_at: NullableMillisColumn;
  passkey_id: string | null;
}

/** The logins a certificate has been signed for under a step-up, one each. */
export interface SshStepUpCertificatesTable {
  step_up_id: string;
  target_id: string;
  login: string;
  certificate_id: string;
}

export interface AccountTables {
  one_time_tokens: OneTimeTokensTable;
  passkeys: PasskeysTable;
  backup_codes: BackupCodesTable;
  user_devices: UserDevicesTable;
  cli_logins: CliLoginsTable;
  linked_accounts: LinkedAccountsTable;
  login_throttles: LoginThrottlesTable;
  request_nonces: RequestNoncesTable;
  ssh_step_ups: SshStepUpsTable;
  ssh_step_up_certificates: SshStepUpCertificatesTable;
}

/**
 * Driver errors -> port errors. The dialect reads its driver's error; this file names the rule.
 *
 * @module
 */
import { StorageUnavailableError, UniqueViolationError } from "@wap/core/storage";
import type { SqlDialectTraits } from "../dialect.js";

interface UniqueRule {
  /** Index or constraint name, as migrations create it (what pg reports). */
  readonly index: string;
  /** `table.column` list, as SQLite reports it. */
  readonly columns: readonly string[];
  /** What the port reports: `<table>.<column>`. */
  readonly rule: string;
}

const rule = (index: string, table: string, columns: string[], ruleColumn: string): UniqueRule => ({
  index,
  columns: columns.map((c) => `${table}.${c}`),
  rule: `${table}.${ruleColumn}`,
});

const uniqueRules: readonly UniqueRule[] = [
  rule("users_pkey", "users", ["id"], "id"),
  rule("users_email_key", "users", ["email"], "email"),
  rule("users_username_key", "users", ["username"], "username"),
  rule("auth_sessions_pkey", "auth_sessions", ["id"], "id"),
  rule("refresh_tokens_pkey", "refresh_tokens", ["id"], "id"),
  rule("refresh_tokens_token_hash_key", "refresh_tokens", ["token_hash"], "token_hash"),
  rule("workspaces_pkey", "workspaces", ["id"], "id"),
  rule("workspace_members_pkey", "workspace_members", ["workspace_id", "user_id"], "user_id"),
  rule("certificate_authorities_pkey", "certificate_authorities", ["id"], "id"),
  rule(
    "certificate_authorities_workspace_name_key",
    "certificate_authorities",
    ["workspace_id", "name"],
    "name",
  ),
  rule(
    "certificate_authorities_one_default_idx",
    "certificate_authorities",
    ["workspace_id", "authority_type"],
    "is_default",
  ),
  rule("service_accounts_pkey", "service_accounts", ["id"], "id"),
  rule("service_accounts_workspace_name_key", "service_accounts", ["workspace_id", "name"], "name"),
  rule("daemons_pkey", "daemons", ["id"], "id"),
  rule("audit_events_id_key", "audit_events", ["id"], "id"),
  rule("secrets_pkey", "secrets", ["name"], "name"),
  rule("targets_pkey", "targets", ["id"], "id"),
  rule("targets_workspace_name_key", "targets", ["workspace_id", "name"], "name"),
  rule("issued_certificates_pkey", "issued_certificates", ["id"], "id"),
  rule("issued_certificates_ca_serial_key", "issued_certificates", ["ca_id", "serial"], "serial"),
  rule("certificate_authority_keys_pkey", "certificate_authority_keys", ["ca_id", "version"], "version"),
  // 003_accounts
  rule("one_time_tokens_pkey", "one_time_tokens", ["id"], "id"),
  rule("one_time_tokens_token_hash_key", "one_time_tokens", ["token_hash"], "token_hash"),
  rule("passkeys_pkey", "passkeys", ["id"], "id"),
  rule("backup_codes_pkey", "backup_codes", ["id"], "id"),
  rule("user_devices_pkey", "user_devices", ["id"], "id"),
  rule("cli_logins_pkey", "cli_logins", ["id"], "id"),
  rule("cli_logins_code_hash_key", "cli_logins", ["code_hash"], "code_hash"),
  rule("linked_accounts_pkey", "linked_accounts", ["user_id", "provider"], "provider"),
  rule("linked_accounts_provider_id_key", "linked_accounts", ["provider", "provider_id"], "provider_id"),
  // 004_workspace_access
  rule("workspace_settings_pkey", "workspace_settings", ["workspace_id"], "workspace_id"),
  rule("workspace_invites_pkey", "workspace_invites", ["workspace_id"], "workspace_id"),
  rule("workspace_invites_token_hash_key", "workspace_invites", ["token_hash"], "token_hash"),
  rule("workspace_domains_pkey", "workspace_domains", ["workspace_id", "domain"], "domain"),
  rule("workspace_domains_verified_idx", "workspace_domains", ["domain"], "verified_domain"),
  rule("teams_pkey", "teams", ["id"], "id"),
  rule("teams_workspace_name_key", "teams", ["workspace_id", "name"], "name"),
  rule("teams_workspace_id_key", "teams", ["workspace_id", "id"], "id"),
  rule("team_members_pkey", "team_members", ["team_id", "user_id"], "user_id"),
  rule("principals_pkey", "principals", ["id"], "id"),
  rule("principals_target_username_key", "principals", ["target_id", "username"], "username"),
  rule("principals_workspace_id_key", "principals", ["workspace_id", "id"], "id"),
  rule("service_accounts_workspace_id_key", "service_accounts", ["workspace_id", "id"], "id"),
  rule("targets_workspace_id_key", "targets", ["workspace_id", "id"], "id"),
  // 005_sso_billing
  rule("oidc_providers_pkey", "oidc_providers", ["id"], "id"),
  rule("saml_providers_pkey", "saml_providers", ["id"], "id"),
  rule("sso_login_states_pkey", "sso_login_states", ["id"], "id"),
  rule("billing_accounts_customer_key", "billing_accounts", ["provider", "customer_id"], "customer_id"),
  // 006_daemons
  rule("daemon_enroll_tokens_pkey", "daemon_enroll_tokens", ["workspace_id"], "workspace_id"),
  rule("daemon_enroll_tokens_token_hash_key", "daemon_enroll_tokens", ["token_hash"], "token_hash"),
  rule("daemon_sessions_pkey", "daemon_sessions", ["id"], "id"),
  rule("ssh_sessions_pkey", "ssh_sessions", ["id"], "id"),
  // 009_recordings
  rule("recordings_pkey", "recordings", ["id"], "id"),
  rule("recording_chunks_pkey", "recording_chunks", ["recording_id", "seq"], "seq"),
  // 011_account_security: the same rule as users_username_key, whatever the case.
  rule("users_username_lower_key", "users", ["lower(username)"], "username"),
];

function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((c) => b.includes(c));
}

/** Our error for a driver error, or the error itself when it is not one we translate. */
export function translateError(dialect: SqlDialectTraits, error: unknown): unknown {
  if (error instanceof UniqueViolationError || error instanceof StorageUnavailableError) return error;
  const kind = dialect.classifyError(error);
  if (kind === undefined) return error;
  if (kind.kind === "unavailable") {
    const detail = error instanceof Error ? error.message : String(error);
    return new StorageUnavailableError(`storage unavailable: ${detail}`, { cause: error });
  }
  const found =
    uniqueRules.find((r) => kind.constraint !== undefined && r.index === kind.constraint) ??
    uniqueRules.find((r) => kind.columns !== undefined && sameColumns(r.columns, kind.columns));
  const name = found?.rule ?? kind.columns?.[kind.columns.length - 1] ?? kind.constraint ?? "unknown";
  return new UniqueViolationError(name, { cause: error });
}

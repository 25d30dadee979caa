/**
 * The SSO and billing tables (migration 005) as Kysely sees them; part of {@link Database}.
 *
 * @module
 */
import type { ColumnType } from "kysely";
import type { FlagColumn, JsonColumn, MillisColumn, NullableMillisColumn } from "./schema.js";

/** Bytes or null (blob / bytea). */
type NullableBytesColumn = ColumnType<Uint8Array | null, Uint8Array | null, Uint8Array | null>;

export interface OidcProvidersTable {
  id: string;
  workspace_id: string;
  name: string;
  issuer_url: string;
  client_id: string;
  sealed_client_secret: NullableBytesColumn;
  scopes: JsonColumn;
  email_claim: string;
  name_claim: string;
  username_claim: string;
  picture_claim: string;
  enforce_sso: FlagColumn;
  allow_jit_provisioning: FlagColumn;
  use_pkce: FlagColumn;
  is_active: FlagColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface SamlProvidersTable {
  id: string;
  workspace_id: string;
  name: string;
  metadata_url: string;
  email_attribute: string;
  name_attribute: string;
  username_attribute: string;
  picture_attribute: string;
  enforce_sso: FlagColumn;
  allow_jit_provisioning: FlagColumn;
  is_active: FlagColumn;
  /** JSON of the IdP metadata (entity id, SSO URL, certificates, fetched at), or null. */
  idp_metadata: string | null;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface SsoLoginStatesTable {
  id: string;
  workspace_id: string;
  protocol: string;
  data: JsonColumn;
  created_at: MillisColumn;
  expires_at: MillisColumn;
}

export interface BillingAccountsTable {
  workspace_id: string;
  provider: string;
  customer_id: string;
  subscription_id: string;
  product_id: string;
  product_name: string;
  status: string;
  cancel_at_period_end: FlagColumn;
  current_period_end: NullableMillisColumn;
  metadata: JsonColumn;
  state_at: MillisColumn;
  created_at: MillisColumn;
  updated_at: MillisColumn;
}

export interface SsoBillingTables {
  oidc_providers: OidcProvidersTable;
  saml_providers: SamlProvidersTable;
  sso_login_states: SsoLoginStatesTable;
  billing_accounts: BillingAccountsTable;
}

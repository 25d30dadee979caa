/**
 * Row <-> record conversions of the SSO and billing tables, on the scalar rules of `mapping.ts`.
 *
 * @module
 */
import type {
  BillingAccountRecord,
  OidcProviderRecord,
  SamlIdpMetadata,
  SamlProviderRecord,
  SsoLoginStateRecord,
  SsoProtocol,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import type {
  BillingAccountsTable,
  OidcProvidersTable,
  SamlProvidersTable,
  SsoLoginStatesTable,
} from "../schema-sso-billing.js";
import {
  fromBytes,
  fromDate,
  fromDateOrNull,
  fromFlag,
  toBytes,
  toDate,
  toDateOrNull,
  toFlag,
  toJson,
  toStringArray,
  toStringMap,
} from "./mapping.js";

export function oidcProviderToRow(p: OidcProviderRecord): Insertable<OidcProvidersTable> {
  return {
    id: p.id,
    workspace_id: p.workspaceId,
    name: p.name,
    issuer_url: p.issuerUrl,
    client_id: p.clientId,
    sealed_client_secret: p.sealedClientSecret === null ? null : fromBytes(p.sealedClientSecret),
    scopes: toJson(p.scopes),
    email_claim: p.emailClaim,
    name_claim: p.nameClaim,
    username_claim: p.usernameClaim,
    picture_claim: p.pictureClaim,
    enforce_sso: toFlag(p.enforceSso),
    allow_jit_provisioning: toFlag(p.allowJitProvisioning),
    use_pkce: toFlag(p.usePkce),
    is_active: toFlag(p.isActive),
    created_at: fromDate(p.createdAt),
    updated_at: fromDate(p.updatedAt),
  };
}

export function rowToOidcProvider(r: Selectable<OidcProvidersTable>): OidcProviderRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    issuerUrl: r.issuer_url,
    clientId: r.client_id,
    sealedClientSecret: r.sealed_client_secret === null ? null : toBytes(r.sealed_client_secret),
    scopes: toStringArray(r.scopes),
    emailClaim: r.email_claim,
    nameClaim: r.name_claim,
    usernameClaim: r.username_claim,
    pictureClaim: r.picture_claim,
    enforceSso: fromFlag(r.enforce_sso),
    allowJitProvisioning: fromFlag(r.allow_jit_provisioning),
    usePkce: fromFlag(r.use_pkce),
    isActive: fromFlag(r.is_active),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

/** IdP metadata as JSON text; the time as epoch milliseconds so it survives JSON exactly. */
export function idpMetadataToJson(m: SamlIdpMetadata): string {
  return toJson({
    entityId: m.entityId,
    ssoUrl: m.ssoUrl,
    certificates: m.certificates,
    fetchedAt: fromDate(m.fetchedAt),
  });
}

function jsonToIdpMetadata(text: string): SamlIdpMetadata {
  const m = JSON.parse(text) as {
    entityId: string;
    ssoUrl: string;
    certificates: string[];
    fetchedAt: number;
  };
  return {
    entityId: m.entityId,
    ssoUrl: m.ssoUrl,
    certificates: m.certificates,
    fetchedAt: toDate(m.fetchedAt),
  };
}

export function samlProviderToRow(p: SamlProviderRecord): Insertable<SamlProvidersTable> {
  return {
    id: p.id,
    workspace_id: p.workspaceId,
    name: p.name,
    metadata_url: p.metadataUrl,
    email_attribute: p.emailAttribute,
    name_attribute: p.nameAttribute,
    username_attribute: p.usernameAttribute,
    picture_attribute: p.pictureAttribute,
    enforce_sso: toFlag(p.enforceSso),
    allow_jit_provisioning: toFlag(p.allowJitProvisioning),
    is_active: toFlag(p.isActive),
    idp_metadata: p.idpMetadata === null ? null : idpMetadataToJson(p.idpMetadata),
    created_at: fromDate(p.createdAt),
    updated_at: fromDate(p.updatedAt),
  };
}

export function rowToSamlProvider(r: Selectable<SamlProvidersTable>): SamlProviderRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    metadataUrl: r.metadata_url,
    emailAttribute: r.email_attribute,
    nameAttribute: r.name_attribute,
    usernameAttribute: r.username_attribute,
    pictureAttribute: r.picture_attribute,
    enforceSso: fromFlag(r.enforce_sso),
    allowJitProvisioning: fromFlag(r.allow_jit_provisioning),
    isActive: fromFlag(r.is_active),
    idpMetadata: r.idp_metadata === null ? null : jsonToIdpMetadata(r.idp_metadata),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

export function loginStateToRow(s: SsoLoginStateRecord): Insertable<SsoLoginStatesTable> {
  return {
    id: s.id,
    workspace_id: s.workspaceId,
    protocol: s.protocol,
    data: toJson(s.data),
    created_at: fromDate(s.createdAt),
    expires_at: fromDate(s.expiresAt),
  };
}

export function rowToLoginState(r: Selectable<SsoLoginStatesTable>): SsoLoginStateRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    protocol: r.protocol as SsoProtocol,
    data: toStringMap(r.data),
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

export function billingAccountToRow(a: BillingAccountRecord): Insertable<BillingAccountsTable> {
  return {
    workspace_id: a.workspaceId,
    provider: a.provider,
    customer_id: a.customerId,
    subscription_id: a.subscriptionId,
    product_id: a.productId,
    product_name: a.productName,
    status: a.status,
    cancel_at_period_end: toFlag(a.cancelAtPeriodEnd),
    current_period_end: fromDateOrNull(a.currentPeriodEnd),
    metadata: toJson(a.metadata),
    state_at: fromDate(a.stateAt),
    created_at: fromDate(a.createdAt),
    updated_at: fromDate(a.updatedAt),
  };
}

export function rowToBillingAccount(r: Selectable<BillingAccountsTable>): BillingAccountRecord {
  return {
    workspaceId: r.workspace_id,
    provider: r.provider,
    customerId: r.customer_id,
    subscriptionId: r.subscription_id,
    productId: r.product_id,
    productName: r.product_name,
    status: r.status,
    cancelAtPeriodEnd: fromFlag(r.cancel_at_period_end),
    currentPeriodEnd: toDateOrNull(r.current_period_end),
    metadata: toStringMap(r.metadata),
    stateAt: toDate(r.state_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

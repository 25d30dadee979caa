/**
 * OIDC and SAML providers, sign-in states and SSO discovery (`oidc_providers`, `saml_providers`,
 * `sso_login_states`). Upserts are one `insert ... on conflict do update`, and consuming a sign-in
 * state is one conditional delete, so the database picks the single winner of any race.
 *
 * @module
 */
import type {
  OidcProviderRecord,
  OidcProviderRepository,
  SamlIdpMetadata,
  SamlProviderRecord,
  SamlProviderRepository,
  SsoDirectoryRepository,
  SsoLoginStateRecord,
  SsoLoginStateRepository,
  SsoProtocol,
} from "@wap/core/storage";
import type { Insertable, Selectable } from "kysely";
import {
  fromBytes,
  fromDate,
  fromFlag,
  toBytes,
  toDate,
  toFlag,
  toJson,
  toStringArray,
  toStringMap,
} from "../lib/mapping.js";
import { excludedColumns } from "../lib/queries.js";
import type { QueryRunner } from "../repositories.js";
import type { OidcProvidersTable, SamlProvidersTable, SsoLoginStatesTable } from "../schema-sso-billing.js";
import { rowToLinkedAccount } from "./linked-accounts.js";

function rowToOidcProvider(r: Selectable<OidcProvidersTable>): OidcProviderRecord {
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

function loginStateToRow(s: SsoLoginStateRecord): Insertable<SsoLoginStatesTable> {
  return {
    id: s.id,
    workspace_id: s.workspaceId,
    protocol: s.protocol,
    data: toJson(s.data),
    created_at: fromDate(s.createdAt),
    expires_at: fromDate(s.expiresAt),
  };
}

function rowToLoginState(r: Selectable<SsoLoginStatesTable>): SsoLoginStateRecord {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    protocol: r.protocol as SsoProtocol,
    data: toStringMap(r.data),
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
  };
}

function samlProviderToRow(p: SamlProviderRecord): Insertable<SamlProvidersTable> {
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

function oidcProviderToRow(p: OidcProviderRecord): Insertable<OidcProvidersTable> {
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

/** IdP metadata as JSON text; the time as epoch milliseconds so it survives JSON exactly. */
function idpMetadataToJson(m: SamlIdpMetadata): string {
  return toJson({
    entityId: m.entityId,
    ssoUrl: m.ssoUrl,
    certificates: m.certificates,
    fetchedAt: fromDate(m.fetchedAt),
  });
}

function rowToSamlProvider(r: Selectable<SamlProvidersTable>): SamlProviderRecord {
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

const samlUpdated = [
  "name",
  "metadata_url",
  "email_attribute",
  "name_attribute",
  "username_attribute",
  "picture_attribute",
  "enforce_sso",
  "allow_jit_provisioning",
  "is_active",
  "idp_metadata",
  "updated_at",
] as const;

const oidcUpdated = [
  "name",
  "issuer_url",
  "client_id",
  "sealed_client_secret",
  "scopes",
  "email_claim",
  "name_claim",
  "username_claim",
  "picture_claim",
  "enforce_sso",
  "allow_jit_provisioning",
  "use_pkce",
  "is_active",
  "updated_at",
] as const;

export function createOidcProviderRepository(run: QueryRunner): OidcProviderRepository {
  return {
    async upsert(provider) {
      await run.write((db) =>
        db
          .insertInto("oidc_providers")
          .values(oidcProviderToRow(provider))
          .onConflict((oc) => oc.column("workspace_id").doUpdateSet(excludedColumns(oidcUpdated)))
          .execute(),
      );
    },
    async find(workspaceId) {
      const row = await run.read((db) =>
        db
          .selectFrom("oidc_providers")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .executeTakeFirst(),
      );
      return row ? rowToOidcProvider(row) : null;
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("oidc_providers").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToOidcProvider(row) : null;
    },
  };
}

export function createSamlProviderRepository(run: QueryRunner): SamlProviderRepository {
  return {
    async upsert(provider) {
      await run.write((db) =>
        db
          .insertInto("saml_providers")
          .values(samlProviderToRow(provider))
          .onConflict((oc) => oc.column("workspace_id").doUpdateSet(excludedColumns(samlUpdated)))
          .execute(),
      );
    },
    async find(workspaceId) {
      const row = await run.read((db) =>
        db
          .selectFrom("saml_providers")
          .selectAll()
          .where("workspace_id", "=", workspaceId)
          .executeTakeFirst(),
      );
      return row ? rowToSamlProvider(row) : null;
    },
    async findById(id) {
      const row = await run.read((db) =>
        db.selectFrom("saml_providers").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? rowToSamlProvider(row) : null;
    },
    async setIdpMetadata(workspaceId, metadataUrl, metadata) {
      const result = await run.write((db) =>
        db
          .updateTable("saml_providers")
          .set({ idp_metadata: idpMetadataToJson(metadata) })
          .where("workspace_id", "=", workspaceId)
          .where("metadata_url", "=", metadataUrl)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },
  };
}

export function createSsoLoginStateRepository(run: QueryRunner): SsoLoginStateRepository {
  return {
    async insert(state) {
      await run.write((db) => db.insertInto("sso_login_states").values(loginStateToRow(state)).execute());
    },
    async find(id, at) {
      const row = await run.read((db) =>
        db
          .selectFrom("sso_login_states")
          .selectAll()
          .where("id", "=", id)
          .where("expires_at", ">", fromDate(at))
          .executeTakeFirst(),
      );
      return row ? rowToLoginState(row) : null;
    },
    async consume(id, protocol, at) {
      const row = await run.write((db) =>
        db
          .deleteFrom("sso_login_states")
          .where("id", "=", id)
          .where("protocol", "=", protocol)
          .where("expires_at", ">", fromDate(at))
          .returningAll()
          .executeTakeFirst(),
      );
      return row ? rowToLoginState(row) : null;
    },
    async deleteExpired(before) {
      await run.write((db) =>
        db.deleteFrom("sso_login_states").where("expires_at", "<", fromDate(before)).execute(),
      );
    },
  };
}

export function createSsoDirectoryRepository(run: QueryRunner): SsoDirectoryRepository {
  return {
    async findLinkedAccount(provider, providerId) {
      const row = await run.read((db) =>
        db
          .selectFrom("linked_accounts")
          .selectAll()
          .where("provider", "=", provider)
          .where("provider_id", "=", providerId)
          .executeTakeFirst(),
      );
      return row ? rowToLinkedAccount(row) : null;
    },
    async workspaceForVerifiedDomain(domain) {
      const row = await run.read((db) =>
        db
          .selectFrom("workspace_domains")
          .select("workspace_id")
          .where("domain", "=", domain)
          .where("verified_at", "is not", null)
          .executeTakeFirst(),
      );
      return row?.workspace_id ?? null;
    },
  };
}

/**
 * Each workspace's OIDC and SAML identity providers, the sign-ins in flight and the lookups SSO
 * discovery needs (`oidc_providers`, `saml_providers`, `sso_login_states`).
 *
 * @module
 */
import type { LinkedAccountRecord } from "./linked-accounts.js";

/** A workspace's OpenID Connect identity provider (at most one per workspace). */
export interface OidcProviderRecord {
  /** Names the provider in CheckSSO and in sign-in links; kept across updates. Unique. */
  readonly id: string;
  /** Unique: one OIDC provider per workspace. */
  readonly workspaceId: string;
  readonly name: string;
  readonly issuerUrl: string;
  readonly clientId: string;
  /**
   * The client secret sealed by the key store (context `oidc-client-secret:<workspaceId>`), or
   * null for a public client (PKCE only).
   */
  readonly sealedClientSecret: Uint8Array | null;
  readonly scopes: readonly string[];
  /** Claim names; empty means the standard claim. */
  readonly emailClaim: string;
  readonly nameClaim: string;
  readonly usernameClaim: string;
  readonly pictureClaim: string;
  readonly enforceSso: boolean;
  readonly allowJitProvisioning: boolean;
  readonly usePkce: boolean;
  readonly isActive: boolean;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface OidcProviderRepository {
  /** Inserts the workspace's provider, or replaces every field of it but `id` and `createdAt`. */
  upsert(provider: OidcProviderRecord): Promise<void>;
  find(workspaceId: string): Promise<OidcProviderRecord | null>;
  /** By provider id, whichever workspace it belongs to (sign-in starts from a CheckSSO answer). */
  findById(id: string): Promise<OidcProviderRecord | null>;
}

/** What a SAML identity provider's metadata document says, as last fetched. */
export interface SamlIdpMetadata {
  readonly entityId: string;
  /** The HTTP-Redirect SingleSignOnService location. */
  readonly ssoUrl: string;
  /** PEM certificates the IdP signs with. */
  readonly certificates: readonly string[];
  readonly fetchedAt: Date;
}

/** A workspace's SAML 2.0 identity provider (at most one per workspace). */
export interface SamlProviderRecord {
  /** Names the provider in CheckSSO and in sign-in links; kept across updates. Unique. */
  readonly id: string;
  /** Unique: one SAML provider per workspace. */
  readonly workspaceId: string;
  readonly name: string;
  readonly metadataUrl: string;
  /** Attribute names; empty means the usual names (see sso/saml.ts). */
  readonly emailAttribute: string;
  readonly nameAttribute: string;
  readonly usernameAttribute: string;
  readonly pictureAttribute: string;
  readonly enforceSso: boolean;
  readonly allowJitProvisioning: boolean;
  readonly isActive: boolean;
  /** Null until the metadata at `metadataUrl` was fetched (and again after the URL changed). */
  readonly idpMetadata: SamlIdpMetadata | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface SamlProviderRepository {
  /** Inserts the workspace's provider, or replaces every field of it but `id` and `createdAt`. */
  upsert(provider: SamlProviderRecord): Promise<void>;
  find(workspaceId: string): Promise<SamlProviderRecord | null>;
  /** By provider id, whichever workspace it belongs to. */
  findById(id: string): Promise<SamlProviderRecord | null>;
  /**
   * Stores freshly fetched IdP metadata, only while the provider still points at `metadataUrl`
   * (an update racing with the fetch wins). Returns whether it was stored.
   */
  setIdpMetadata(workspaceId: string, metadataUrl: string, metadata: SamlIdpMetadata): Promise<boolean>;
}

export type SsoProtocol = "oidc" | "saml";

/**
 * A sign-in in flight: created when the browser is sent to the identity provider, consumed
 * once when it comes back. Holds the PKCE verifier and nonce (OIDC) or the AuthnRequest id (SAML).
 */
export interface SsoLoginStateRecord {
  /** SHA-256 of the OIDC `state`, or of the SAML AuthnRequest ID, hex. Unique. */
  readonly id: string;
  readonly workspaceId: string;
  readonly protocol: SsoProtocol;
  readonly data: Readonly<Record<string, string>>;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface SsoLoginStateRepository {
  insert(state: SsoLoginStateRecord): Promise<void>;
  /** The state if it exists and has not expired at `at`; does not consume it. */
  find(id: string, at: Date): Promise<SsoLoginStateRecord | null>;
  /**
   * Deletes the unexpired state `id` of `protocol` and returns it. Exactly one caller gets it
   * even when many race; every other call (and any call for an unknown or expired id) gets null.
   */
  consume(id: string, protocol: SsoProtocol, at: Date): Promise<SsoLoginStateRecord | null>;
  /** Forgets states that expired before `before`. */
  deleteExpired(before: Date): Promise<void>;
}

/** Lookups across workspaces that public SSO discovery needs. */
export interface SsoDirectoryRepository {
  /** The identity linked under `provider` with this id at the provider, whoever holds it. */
  findLinkedAccount(provider: string, providerId: string): Promise<LinkedAccountRecord | null>;
  /**
   * The workspace that has verified `domain` (lower case, no trailing dot), or null. At most one
   * workspace can verify a domain.
   */
  workspaceForVerifiedDomain(domain: string): Promise<string | null>;
}

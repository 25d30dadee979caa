/**
 * External identities linked to users (`linked_accounts`).
 *
 * @module
 */

/** An external identity (OAuth, OIDC or SAML) linked to a user. */
export interface LinkedAccountRecord {
  readonly userId: string;
  /** Provider name, e.g. "github"; one link per provider and user. */
  readonly provider: string;
  /** The user's id at the provider; unique per provider. */
  readonly providerId: string;
  readonly providerEmail: string;
  readonly providerUsername: string;
  /** "oauth", "oidc" or "saml". */
  readonly protocol: string;
  readonly createdAt: Date;
}

export interface LinkedAccountRepository {
  insert(account: LinkedAccountRecord): Promise<void>;
  /** Oldest first. */
  listByUser(userId: string): Promise<LinkedAccountRecord[]>;
  delete(userId: string, provider: string): Promise<boolean>;
}

/**
 * Which SSO applies to an email address: the workspace that verified the address's domain, and
 * that workspace's active providers. Used by CheckSSO, by sign-in, and by password login (which
 * an enforcing workspace refuses for its domain, whatever the method but SSO).
 *
 * A domain counts only when it is verified (DNS proof, WorkspaceDomainService), and only exactly:
 * verifying `example.com` says nothing about `eng.example.com`.
 *
 * @module
 */
import { FailedPreconditionError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { OidcProviderRecord, SamlProviderRecord } from "../storage/sso.js";
import type { Repositories } from "../storage/storage.js";

/** The domain of an email address, lower case, without a trailing dot; "" when there is none. */
export function emailDomain(email: string): string {
  const at = email.lastIndexOf("@");
  if (at < 0) return "";
  return email
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, "");
}

/** The SSO of the workspace that verified an address's domain. */
export interface DomainSso {
  readonly workspaceId: string;
  /** Active providers only. */
  readonly oidc: OidcProviderRecord | null;
  readonly saml: SamlProviderRecord | null;
  /** True when an active provider enforces SSO for the domain. */
  readonly enforced: boolean;
}

/** What reading an address's SSO takes. */
type SsoRepositories = Pick<Repositories, "ssoDirectory" | "oidcProviders" | "samlProviders">;

/** The SSO that governs `email`, or null when no workspace verified its domain. */
export async function ssoForEmail(repositories: SsoRepositories, email: string): Promise<DomainSso | null> {
  const domain = emailDomain(email);
  if (domain === "") return null;
  const workspaceId = await repositories.ssoDirectory.workspaceForVerifiedDomain(domain);
  if (workspaceId === null) return null;
  const [oidc, saml] = await Promise.all([
    repositories.oidcProviders.find(workspaceId),
    repositories.samlProviders.find(workspaceId),
  ]);
  const activeOidc = oidc?.isActive ? oidc : null;
  const activeSaml = saml?.isActive ? saml : null;
  return {
    workspaceId,
    oidc: activeOidc,
    saml: activeSaml,
    enforced: Boolean(activeOidc?.enforceSso || activeSaml?.enforceSso),
  };
}

/**
 * True when the workspace owning `email`'s verified domain requires SSO for it. Inside a
 * transaction, pass its repositories (`tx`): the storage itself refuses calls made from there.
 */
export async function ssoEnforcedFor(
  services: Services,
  email: string,
  repositories: SsoRepositories = services.storage,
): Promise<boolean> {
  return (await ssoForEmail(repositories, email))?.enforced ?? false;
}

/** Every way of signing in; SSO's are named after their protocol. */
export type SignInMethod = "password" | "backup_code" | "passkey" | "oidc" | "saml";

/**
 * The one rule of who may sign in how: an address whose organisation requires SSO signs in only
 * through its identity provider, never with a password, a backup code or a passkey. Every session
 * starts through `startSession`, which calls this; Login and LoginWithBackupCode also call it
 * before checking the secret, so a refused account's password is never tested.
 */
export async function assertSignInAllowed(
  services: Services,
  email: string,
  method: SignInMethod,
  repositories: SsoRepositories = services.storage,
): Promise<void> {
  if (method === "oidc" || method === "saml") return;
  if (await ssoEnforcedFor(services, email, repositories)) {
    throw new FailedPreconditionError(
      `single sign-on is required for ${emailDomain(email)} addresses: sign in with your organisation's identity provider`,
      { reason: "SSO_REQUIRED" },
    );
  }
}

/** Refuses password sign-in for an address whose organisation requires SSO. */
export async function assertPasswordLoginAllowed(services: Services, email: string): Promise<void> {
  await assertSignInAllowed(services, email, "password");
}

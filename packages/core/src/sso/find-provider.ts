import { ssoForEmail } from "../auth/directory.js";
import { NotFoundError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { OidcProviderRecord, SamlProviderRecord } from "../storage/sso.js";

/**
 * Which provider a sign-in starts with: the id CheckSSO returned, a workspace, or an email
 * address (the workspace that verified its domain).
 */
export type SsoTarget =
  | { readonly providerId: string }
  | { readonly workspaceId: string }
  | { readonly email: string };

/** The active provider of `protocol` that `target` names; NotFoundError otherwise. */
export async function findProvider(
  services: Services,
  protocol: "oidc",
  target: SsoTarget,
): Promise<OidcProviderRecord>;
export async function findProvider(
  services: Services,
  protocol: "saml",
  target: SsoTarget,
): Promise<SamlProviderRecord>;
export async function findProvider(
  services: Services,
  protocol: "oidc" | "saml",
  target: SsoTarget,
): Promise<OidcProviderRecord | SamlProviderRecord> {
  const repository = protocol === "oidc" ? services.storage.oidcProviders : services.storage.samlProviders;
  let provider: OidcProviderRecord | SamlProviderRecord | null = null;
  if ("providerId" in target) provider = await repository.findById(target.providerId);
  else if ("workspaceId" in target) provider = await repository.find(target.workspaceId);
  else {
    const sso = await ssoForEmail(services.storage, target.email);
    provider = (protocol === "oidc" ? sso?.oidc : sso?.saml) ?? null;
  }
  if (!provider?.isActive) {
    throw new NotFoundError(`no active ${protocol.toUpperCase()} provider matches this sign-in`, {
      reason: "SSO_PROVIDER_NOT_FOUND",
    });
  }
  return provider;
}

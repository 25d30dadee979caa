import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { OIDCProviderSchema, SAMLProviderSchema } from "@wap/api";
import type { OidcProviderRecord, SamlProviderRecord } from "../storage/sso.js";

/** The API's view of an OIDC provider: everything but the client secret. */
export function toOidcProviderMessage(p: OidcProviderRecord): MessageInitShape<typeof OIDCProviderSchema> {
  return {
    workspaceId: p.workspaceId,
    name: p.name,
    issuerUrl: p.issuerUrl,
    clientId: p.clientId,
    scopes: [...p.scopes],
    emailClaim: p.emailClaim,
    nameClaim: p.nameClaim,
    usernameClaim: p.usernameClaim,
    pictureClaim: p.pictureClaim,
    enforceSso: p.enforceSso,
    allowJitProvisioning: p.allowJitProvisioning,
    usePkce: p.usePkce,
    isActive: p.isActive,
    createdAt: timestampFromDate(p.createdAt),
    updatedAt: timestampFromDate(p.updatedAt),
  };
}

export function toSamlProviderMessage(p: SamlProviderRecord): MessageInitShape<typeof SAMLProviderSchema> {
  return {
    workspaceId: p.workspaceId,
    name: p.name,
    metadataUrl: p.metadataUrl,
    emailAttribute: p.emailAttribute,
    nameAttribute: p.nameAttribute,
    usernameAttribute: p.usernameAttribute,
    pictureAttribute: p.pictureAttribute,
    enforceSso: p.enforceSso,
    allowJitProvisioning: p.allowJitProvisioning,
    isActive: p.isActive,
    createdAt: timestampFromDate(p.createdAt),
    updatedAt: timestampFromDate(p.updatedAt),
  };
}

/**
 * SSOService: each workspace's OIDC and SAML provider (Get/Update, where Update is an upsert and
 * an omitted field is left unchanged), and the public CheckSSO discovery.
 *
 * The OIDC client secret is write-only: sealed by the key store at rest, never returned. The
 * sign-in flows themselves are not RPCs: see oidc.ts and saml.ts.
 *
 * @module
 */

import { SSOProvider_Type, SSOService } from "@wap/api";
import * as z from "zod";
import { ssoForEmail } from "../auth/directory.js";
import { type FieldViolation, InvalidArgumentError, NotFoundError } from "../errors.js";
import { utf8 } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { OidcProviderRecord, SamlProviderRecord } from "../storage/sso.js";
import { email, uuid } from "../validation/rules.js";
import { toOidcProviderMessage, toSamlProviderMessage } from "./messages.js";
import {
  absoluteUri,
  claimName,
  clientId,
  clientSecret,
  isHttpUrl,
  providerName,
  scopes,
} from "./validation.js";

/** The key-store context of a workspace's OIDC client secret. */
export const clientSecretContext = (workspaceId: string) => `oidc-client-secret:${workspaceId}`;

function invalid(violations: FieldViolation[]): InvalidArgumentError {
  const summary = violations.map((v) => `${v.field}: ${v.description}`).join("; ");
  return new InvalidArgumentError(`invalid request: ${summary}`, { violations });
}

function requiredToCreate(input: Record<string, unknown>, fields: readonly string[]): FieldViolation[] {
  return fields
    .filter((field) => input[field] === undefined)
    .map((field) => ({ field, description: "is required to create the provider" }));
}

export const getOidcProvider = defineOperation({
  method: SSOService.method.getOIDCProvider,
  access: { kind: "workspace", permission: "sso.read" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ services, workspace }) {
    const provider = await services.storage.oidcProviders.find(workspace.workspaceId);
    if (!provider) {
      throw new NotFoundError("this workspace has no OIDC provider", {
        reason: "OIDC_PROVIDER_NOT_CONFIGURED",
      });
    }
    return { oidcProvider: toOidcProviderMessage(provider) };
  },
});

export const updateOidcProvider = defineOperation({
  method: SSOService.method.updateOIDCProvider,
  access: { kind: "workspace", permission: "sso.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    name: providerName.optional(),
    issuerUrl: absoluteUri.optional(),
    clientId: clientId.optional(),
    clientSecret: clientSecret.optional(),
    scopes,
    emailClaim: claimName.optional(),
    nameClaim: claimName.optional(),
    usernameClaim: claimName.optional(),
    pictureClaim: claimName.optional(),
    enforceSso: z.boolean().optional(),
    allowJitProvisioning: z.boolean().optional(),
    usePkce: z.boolean().optional(),
    isActive: z.boolean().optional(),
  }),
  async run(call) {
    const { input, services, workspace, now } = call;
    const workspaceId = workspace.workspaceId;
    const existing = await services.storage.oidcProviders.find(workspaceId);
    const violations = existing ? [] : requiredToCreate(input, ["name", "issuerUrl", "clientId"]);
    const issuerUrl = input.issuerUrl ?? existing?.issuerUrl ?? "";
    if (input.issuerUrl !== undefined && !isHttpUrl(issuerUrl)) {
      violations.push({ field: "issuerUrl", description: "must be an http(s) URL of the issuer" });
    }
    if (!input.scopes.includes("openid")) {
      violations.push({ field: "scopes", description: "must include 'openid'" });
    }
    const usePkce = input.usePkce ?? existing?.usePkce ?? true;
    const sealedClientSecret =
      input.clientSecret === undefined
        ? (existing?.sealedClientSecret ?? null)
        : await services.keyStore.seal(utf8(input.clientSecret), clientSecretContext(workspaceId));
    if (sealedClientSecret === null && !usePkce) {
      violations.push({
        field: "usePkce",
        description: "must be true for a provider without a clientSecret",
      });
    }
    if (violations.length > 0) throw invalid(violations);

    const record: OidcProviderRecord = {
      id: existing?.id ?? services.random.uuid(),
      workspaceId,
      name: input.name ?? existing?.name ?? "",
      issuerUrl,
      clientId: input.clientId ?? existing?.clientId ?? "",
      sealedClientSecret,
      scopes: [...input.scopes],
      emailClaim: input.emailClaim ?? existing?.emailClaim ?? "email",
      nameClaim: input.nameClaim ?? existing?.nameClaim ?? "name",
      usernameClaim: input.usernameClaim ?? existing?.usernameClaim ?? "preferred_username",
      pictureClaim: input.pictureClaim ?? existing?.pictureClaim ?? "picture",
      enforceSso: input.enforceSso ?? existing?.enforceSso ?? false,
      allowJitProvisioning: input.allowJitProvisioning ?? existing?.allowJitProvisioning ?? false,
      usePkce,
      isActive: input.isActive ?? existing?.isActive ?? true,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    const stored = await services.storage.transaction(async (tx) => {
      await tx.oidcProviders.upsert(record);
      // A racing first upsert may have won: the stored row (and its id) is the truth.
      const saved = (await tx.oidcProviders.find(workspaceId)) ?? record;
      await call.audit(tx, {
        action: existing ? "sso.oidc.update" : "sso.oidc.create",
        resource: `oidc_provider:${saved.id}`,
      });
      return saved;
    });
    return { oidcProvider: toOidcProviderMessage(stored) };
  },
});

export const getSamlProvider = defineOperation({
  method: SSOService.method.getSAMLProvider,
  access: { kind: "workspace", permission: "sso.read" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ services, workspace }) {
    const provider = await services.storage.samlProviders.find(workspace.workspaceId);
    if (!provider) {
      throw new NotFoundError("this workspace has no SAML provider", {
        reason: "SAML_PROVIDER_NOT_CONFIGURED",
      });
    }
    return { samlProvider: toSamlProviderMessage(provider) };
  },
});

export const updateSamlProvider = defineOperation({
  method: SSOService.method.updateSAMLProvider,
  access: { kind: "workspace", permission: "sso.manage" },
  input: z.object({
    workspaceId: uuid.optional(),
    name: providerName.optional(),
    metadataUrl: absoluteUri.optional(),
    emailAttribute: claimName.optional(),
    nameAttribute: claimName.optional(),
    usernameAttribute: claimName.optional(),
    pictureAttribute: claimName.optional(),
    enforceSso: z.boolean().optional(),
    allowJitProvisioning: z.boolean().optional(),
    isActive: z.boolean().optional(),
  }),
  async run(call) {
    const { input, services, workspace, now } = call;
    const workspaceId = workspace.workspaceId;
    const existing = await services.storage.samlProviders.find(workspaceId);
    const violations = existing ? [] : requiredToCreate(input, ["name", "metadataUrl"]);
    const metadataUrl = input.metadataUrl ?? existing?.metadataUrl ?? "";
    if (input.metadataUrl !== undefined && !isHttpUrl(metadataUrl)) {
      violations.push({ field: "metadataUrl", description: "must be an http(s) URL of the IdP metadata" });
    }
    if (violations.length > 0) throw invalid(violations);

    const record: SamlProviderRecord = {
      id: existing?.id ?? services.random.uuid(),
      workspaceId,
      name: input.name ?? existing?.name ?? "",
      metadataUrl,
      emailAttribute: input.emailAttribute ?? existing?.emailAttribute ?? "",
      nameAttribute: input.nameAttribute ?? existing?.nameAttribute ?? "",
      usernameAttribute: input.usernameAttribute ?? existing?.usernameAttribute ?? "",
      pictureAttribute: input.pictureAttribute ?? existing?.pictureAttribute ?? "",
      enforceSso: input.enforceSso ?? existing?.enforceSso ?? false,
      allowJitProvisioning: input.allowJitProvisioning ?? existing?.allowJitProvisioning ?? false,
      isActive: input.isActive ?? existing?.isActive ?? true,
      // Metadata of another URL says nothing about this one: fetched again at the next sign-in.
      idpMetadata: existing && existing.metadataUrl === metadataUrl ? existing.idpMetadata : null,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    const stored = await services.storage.transaction(async (tx) => {
      await tx.samlProviders.upsert(record);
      const saved = (await tx.samlProviders.find(workspaceId)) ?? record;
      await call.audit(tx, {
        action: existing ? "sso.saml.update" : "sso.saml.create",
        resource: `saml_provider:${saved.id}`,
      });
      return saved;
    });
    return { samlProvider: toSamlProviderMessage(stored) };
  },
});

export const checkSso = defineOperation({
  method: SSOService.method.checkSSO,
  // Public by the schema: a sign-in page asks before it knows who is signing in.
  access: { kind: "public" },
  input: z.object({ email }),
  async run({ input, services }) {
    const sso = await ssoForEmail(services.storage, input.email);
    const providers = [
      ...(sso?.oidc ? [{ type: SSOProvider_Type.OIDC, id: sso.oidc.id, name: sso.oidc.name }] : []),
      ...(sso?.saml ? [{ type: SSOProvider_Type.SAML, id: sso.saml.id, name: sso.saml.name }] : []),
    ];
    return { hasSso: providers.length > 0, enforceSso: sso?.enforced ?? false, providers };
  },
});

export const ssoOperations = [
  getOidcProvider,
  updateOidcProvider,
  getSamlProvider,
  updateSamlProvider,
  checkSso,
];

/**
 * SAML 2.0 sign-in (SP-initiated, HTTP-Redirect AuthnRequest, HTTP-POST response), on
 * @node-saml/node-saml. Not RPCs: the server mounts them as browser endpoints.
 *
 * - `GET /v1/sso/saml/{workspaceId}/metadata` -> {@link samlServiceProviderMetadata}
 * - `GET /v1/sso/saml/{providerId}/start` -> {@link beginSamlSignIn}: redirect and set the cookie
 * - `POST /v1/sso/saml/{workspaceId}/acs` -> {@link finishSamlSignIn} with the form's SAMLResponse
 *
 * Accepted are only responses to a request of ours (InResponseTo, single use, same browser)
 * whose assertion is signed by a certificate of the IdP's metadata, issued by that IdP, meant
 * for us (audience), within its validity window, and not seen before (assertion ids are
 * remembered until they expire). IdP-initiated sign-in is refused: nothing ties it to a browser.
 *
 * @module
 */
import type { CacheProvider, Profile, SAML } from "@node-saml/node-saml";
import type { RequestFacts } from "../audit/record.js";
import { NotFoundError, PlatformError, UnauthenticatedError } from "../errors.js";
import { toHex } from "../lib/bytes.js";
import type { Services } from "../operations/services.js";
import type { SamlIdpMetadata, SamlProviderRecord } from "../storage/sso.js";
import { findProvider, type SsoTarget } from "./find-provider.js";
import { type ExternalIdentity, signInExternalIdentity } from "./identity.js";
import {
  type BrowserBinding,
  safeReturnTo,
  saveLoginState,
  sha256Hex,
  takeLoginState,
} from "./login-state.js";
import type { SsoFinish, SsoStart } from "./oidc.js";
import { ssoOptions, ssoUrls } from "./options.js";
import { idpMetadataOf } from "./saml-metadata.js";

const transientFormat = "urn:oasis:names:tc:SAML:2.0:nameid-format:transient";
const emailFormat = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";

/** The attribute names tried, in order, when the provider names none. */
const defaultAttributes = {
  email: [
    "email",
    "mail",
    "emailAddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
  ],
  name: [
    "displayName",
    "name",
    "cn",
    "urn:oid:2.16.840.1.113730.3.1.241",
    "urn:oid:2.5.4.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
  ],
  username: ["username", "uid", "preferred_username", "urn:oid:0.9.2342.19200300.100.1.1"],
  picture: ["picture", "photo"],
} as const;

/** @node-saml/node-saml, loaded at the first SAML call: a platform without SAML never loads it. */
let nodeSaml: Promise<typeof import("@node-saml/node-saml")> | undefined;
const samlLibrary = () => (nodeSaml ??= import("@node-saml/node-saml"));

async function samlClient(
  services: Services,
  provider: SamlProviderRecord,
  metadata: SamlIdpMetadata,
  cacheProvider: CacheProvider,
): Promise<SAML> {
  const { SAML, ValidateInResponseTo } = await samlLibrary();
  const options = ssoOptions(services);
  const urls = ssoUrls(services, provider.workspaceId);
  return new SAML({
    callbackUrl: urls.samlAcsUrl,
    entryPoint: metadata.ssoUrl,
    issuer: urls.samlEntityId,
    audience: urls.samlEntityId,
    idpCert: [...metadata.certificates],
    idpIssuer: metadata.entityId,
    // The assertion must carry its own signature; a signed response around it is optional.
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: options.clockSkewSeconds * 1000,
    validateInResponseTo: ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: options.loginTtlSeconds * 1000,
    cacheProvider,
    // No NameIDPolicy format and no RequestedAuthnContext: both make some IdPs refuse (MFA, passkeys).
    identifierFormat: null,
    disableRequestedAuthnContext: true,
    signatureAlgorithm: "sha256",
    generateUniqueId: () => `_${toHex(services.random.bytes(20))}`,
  });
}

/** The SP metadata document of a workspace, for its IdP administrator. */
export async function samlServiceProviderMetadata(services: Services, workspaceId: string): Promise<string> {
  const provider = await services.storage.samlProviders.find(workspaceId);
  if (!provider)
    throw new NotFoundError("this workspace has no SAML provider", {
      reason: "SAML_PROVIDER_NOT_CONFIGURED",
    });
  const urls = ssoUrls(services, workspaceId);
  const { generateServiceProviderMetadata } = await samlLibrary();
  return generateServiceProviderMetadata({
    issuer: urls.samlEntityId,
    callbackUrl: urls.samlAcsUrl,
    identifierFormat: null,
    wantAssertionsSigned: true,
    generateUniqueId: () => `_${toHex(services.random.bytes(20))}`,
  });
}

/**
 * Starts a SAML sign-in with the active provider named by `target`. Returns the IdP's sign-in
 * URL (carrying the AuthnRequest) and the binding cookie the server must set.
 */
export async function beginSamlSignIn(
  services: Services,
  target: SsoTarget,
  options: { readonly returnTo?: string } = {},
): Promise<SsoStart> {
  const provider = await findProvider(services, "saml", target);
  const metadata = await idpMetadataOf(services, provider);
  let binding: BrowserBinding | undefined;
  // node-saml hands over the AuthnRequest id here; it is stored as the sign-in's state.
  const cacheProvider: CacheProvider = {
    async saveAsync(key, value) {
      binding = await saveLoginState(services, {
        key,
        workspaceId: provider.workspaceId,
        protocol: "saml",
        data: { providerId: provider.id, returnTo: safeReturnTo(options.returnTo) },
      });
      return { value, createdAt: services.clock.now().getTime() };
    },
    getAsync: async () => null,
    removeAsync: async () => null,
  };
  const url = await (await samlClient(services, provider, metadata, cacheProvider)).getAuthorizeUrlAsync(
    "",
    undefined,
    {},
  );
  if (!binding) throw new Error("node-saml did not record the AuthnRequest id");
  return { authorizationUrl: url, binding };
}

/** The first string value of an attribute (multi-valued attributes arrive as arrays). */
function attribute(profile: Profile, configured: string, defaults: readonly string[]): string {
  for (const name of configured === "" ? defaults : [configured]) {
    const value = profile[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string" && first.trim() !== "") return first.trim();
  }
  return "";
}

interface AssertionFacts {
  readonly id: string;
  readonly issuer: string;
  readonly expiresAt: Date;
}

/** The id, issuer and end of validity of the (verified) assertion behind `profile`. */
function assertionFacts(profile: Profile): AssertionFacts {
  const doc = profile.getAssertion?.() as
    | {
        Assertion?: {
          $?: Record<string, string>;
          Issuer?: { _?: string }[];
          Conditions?: { $?: Record<string, string> }[];
          Subject?: {
            SubjectConfirmation?: { SubjectConfirmationData?: { $?: Record<string, string> }[] }[];
          }[];
        };
      }
    | undefined;
  const assertion = doc?.Assertion;
  const id = assertion?.$?.ID ?? "";
  const issuer = assertion?.Issuer?.[0]?._ ?? "";
  const ends = [
    assertion?.Conditions?.[0]?.$?.NotOnOrAfter,
    ...(assertion?.Subject?.[0]?.SubjectConfirmation ?? []).map(
      (c) => c.SubjectConfirmationData?.[0]?.$?.NotOnOrAfter,
    ),
  ]
    .filter((value): value is string => typeof value === "string")
    .map((value) => Date.parse(value))
    .filter((ms) => !Number.isNaN(ms));
  if (id === "") throw new Error("the assertion has no ID");
  if (ends.length === 0) throw new Error("the assertion has no NotOnOrAfter: it would never expire");
  return { id, issuer, expiresAt: new Date(Math.max(...ends)) };
}

/**
 * Completes a SAML sign-in at workspace `workspaceId`'s ACS: `samlResponse` is the form's
 * base64 `SAMLResponse`, `binding` the value of the binding cookie.
 *
 * Throws UnauthenticatedError when the response is not accepted (see the module comment), and
 * the errors of identity.ts when the identity may not sign in.
 */
export async function finishSamlSignIn(
  services: Services,
  acs: { readonly workspaceId: string; readonly samlResponse: string; readonly binding?: string },
  request: RequestFacts,
): Promise<SsoFinish> {
  const rejected = (message: string, cause?: unknown) =>
    new UnauthenticatedError(`the SAML response was rejected: ${message}`, {
      reason: "SAML_RESPONSE_REJECTED",
      ...(cause === undefined ? {} : { cause }),
    });
  const provider = await services.storage.samlProviders.find(acs.workspaceId);
  if (!provider?.isActive) throw rejected("this workspace has no active SAML provider");
  const metadata = await idpMetadataOf(services, provider);
  const { clockSkewSeconds } = ssoOptions(services);

  // node-saml checks InResponseTo against our stored requests (consumed below, once).
  const cacheProvider: CacheProvider = {
    saveAsync: async () => null,
    async getAsync(key) {
      const state = await services.storage.ssoLoginStates.find(sha256Hex(key), services.clock.now());
      if (state?.protocol !== "saml" || state.workspaceId !== acs.workspaceId) return null;
      return state.createdAt.toISOString();
    },
    removeAsync: async () => null,
  };
  let profile: Profile;
  let facts: AssertionFacts;
  try {
    const result = await (
      await samlClient(services, provider, metadata, cacheProvider)
    ).validatePostResponseAsync({
      SAMLResponse: acs.samlResponse,
    });
    if (!result.profile) throw new Error("the response carries no assertion");
    profile = result.profile;
    facts = assertionFacts(profile);
  } catch (error) {
    if (error instanceof PlatformError) throw error;
    throw rejected(error instanceof Error ? error.message : String(error), error);
  }
  if (facts.issuer !== metadata.entityId)
    throw rejected(`the assertion was issued by ${facts.issuer}, not the IdP`);

  const inResponseTo = typeof profile.inResponseTo === "string" ? profile.inResponseTo : "";
  const state = await takeLoginState(services, inResponseTo, "saml", acs.binding);
  if (!state || state.workspaceId !== acs.workspaceId) {
    throw new UnauthenticatedError(
      "this sign-in is unknown, expired, already used or was started in another browser: start again",
      { reason: "SSO_STATE_INVALID" },
    );
  }
  // Remembered until it could no longer be accepted anyway: its end of validity plus the skew.
  const now = services.clock.now();
  const fresh = await services.storage.requestNonces.claim(
    `saml-assertion:${metadata.entityId}`,
    facts.id,
    new Date(facts.expiresAt.getTime() + clockSkewSeconds * 1000),
    now,
  );
  if (!fresh) throw rejected("this assertion was used before (replay)");

  const nameId = profile.nameID ?? "";
  const email =
    attribute(profile, provider.emailAttribute, defaultAttributes.email) ||
    (profile.nameIDFormat === emailFormat ? nameId : "");
  // A transient NameID changes at every sign-in: the address is the stable subject then.
  const subject =
    profile.nameIDFormat === transientFormat || nameId === "" ? `email:${email.toLowerCase()}` : nameId;
  const identity: ExternalIdentity = {
    workspaceId: provider.workspaceId,
    protocol: "saml",
    providerRecordId: provider.id,
    providerId: `${metadata.entityId}|${subject}`,
    email,
    emailVerified: undefined,
    name: attribute(profile, provider.nameAttribute, defaultAttributes.name),
    username: attribute(profile, provider.usernameAttribute, defaultAttributes.username),
    picture: attribute(profile, provider.pictureAttribute, defaultAttributes.picture),
    allowJitProvisioning: provider.allowJitProvisioning,
  };
  const signIn = await signInExternalIdentity(services, identity, request);
  return { ...signIn, returnTo: state.data.returnTo ?? "/" };
}

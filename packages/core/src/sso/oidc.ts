/**
 * OpenID Connect sign-in (authorization code flow with PKCE, state and nonce), on openid-client.
 * Not RPCs: the server mounts them as browser endpoints.
 *
 * - `GET /v1/sso/oidc/{providerId}/start` -> {@link beginOidcSignIn}: redirect to
 *   `authorizationUrl` and set the binding cookie.
 * - `GET /v1/sso/oidc/callback` -> {@link finishOidcSignIn} with the query and the cookie.
 *
 * The state, nonce and PKCE verifier stay on the server (single use, see login-state.ts); the
 * ID token's signature, issuer, audience, nonce and expiry are checked by openid-client.
 *
 * @module
 */
import type * as OpenId from "openid-client";
import type { RequestFacts } from "../audit/record.js";
import { PlatformError, UnauthenticatedError, UnavailableError } from "../errors.js";
import { fromUtf8 } from "../lib/bytes.js";
import type { Services } from "../operations/services.js";
import type { OidcProviderRecord } from "../storage/sso.js";
import { findProvider, type SsoTarget } from "./find-provider.js";
import { type ExternalIdentity, type SsoSignIn, signInExternalIdentity } from "./identity.js";
import {
  type BrowserBinding,
  randomToken,
  safeReturnTo,
  saveLoginState,
  takeLoginState,
} from "./login-state.js";
import { clientSecretContext } from "./operations.js";
import { isAllowedIdpUrl, ssoOptions, ssoUrls } from "./options.js";

/** Where to send the browser, and the cookie to set on the way. */
export interface SsoStart {
  readonly authorizationUrl: string;
  readonly binding: BrowserBinding;
}

/** The result of a sign-in, plus where the web app wanted the user to land. */
export interface SsoFinish extends SsoSignIn {
  readonly returnTo: string;
}

/** openid-client, loaded at the first OIDC call: a platform without OIDC never loads it. */
let openIdClient: Promise<typeof OpenId> | undefined;
const openId = () => (openIdClient ??= import("openid-client"));

/** A client configuration for the provider, from its discovery document. */
async function configure(services: Services, provider: OidcProviderRecord): Promise<OpenId.Configuration> {
  const client = await openId();
  const options = ssoOptions(services);
  const issuer = new URL(provider.issuerUrl);
  if (!isAllowedIdpUrl(issuer, options)) {
    throw new PlatformError("failed_precondition", `the OIDC issuer ${provider.issuerUrl} must use https`, {
      reason: "SSO_INSECURE_ISSUER",
    });
  }
  const secret =
    provider.sealedClientSecret === null
      ? undefined
      : fromUtf8(
          await services.keyStore.open(
            provider.sealedClientSecret,
            clientSecretContext(provider.workspaceId),
          ),
        );
  const requestOptions: OpenId.DiscoveryRequestOptions = {
    [client.customFetch]: (url, init) => options.fetch(url, init as RequestInit),
    timeout: options.requestTimeoutSeconds,
    ...(issuer.protocol === "http:" ? { execute: [client.allowInsecureRequests] } : {}),
  };
  // client_secret_basic is the OpenID default; servers that only take client_secret_post get that.
  let config: OpenId.Configuration;
  const failureKey = `oidc ${provider.issuerUrl}`;
  const failed = options.documentFailures.recall(failureKey);
  if (failed !== undefined) throw failed;
  try {
    config = await client.discovery(
      issuer,
      provider.clientId,
      secret,
      secret === undefined ? client.None() : client.ClientSecretBasic(secret),
      requestOptions,
    );
  } catch (error) {
    const failure = new UnavailableError(
      `could not read the OpenID configuration of ${provider.issuerUrl}: ${describe(error)}`,
      { reason: "SSO_DISCOVERY_FAILED", cause: error },
    );
    options.documentFailures.remember(failureKey, failure);
    throw failure;
  }
  try {
    checkDiscovered(provider.issuerUrl, config.serverMetadata());
  } catch (error) {
    options.documentFailures.remember(failureKey, error as Error);
    throw error;
  }
  const methods = config.serverMetadata().token_endpoint_auth_methods_supported;
  if (
    secret !== undefined &&
    methods &&
    !methods.includes("client_secret_basic") &&
    methods.includes("client_secret_post")
  ) {
    config = new client.Configuration(
      config.serverMetadata(),
      provider.clientId,
      secret,
      client.ClientSecretPost(secret),
    );
    config[client.customFetch] = requestOptions[client.customFetch]!;
    config.timeout = options.requestTimeoutSeconds;
    if (issuer.protocol === "http:") client.allowInsecureRequests(config);
  }
  return config;
}

/**
 * A discovery document that parsed but cannot drive a sign-in (an endpoint missing or not a URL)
 * is the provider's configuration at fault: `unavailable`, with what to fix.
 */
function checkDiscovered(issuerUrl: string, metadata: OpenId.ServerMetadata): void {
  for (const field of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const) {
    const value: unknown = metadata[field];
    let usable = false;
    try {
      usable = typeof value === "string" && ["https:", "http:"].includes(new URL(value).protocol);
    } catch {
      usable = false;
    }
    if (!usable) {
      throw new UnavailableError(
        `the OpenID configuration of ${issuerUrl} is not usable: ${field} is ${value === undefined ? "missing" : "not an http(s) URL"}; check the issuer URL and the provider's /.well-known/openid-configuration`,
        { reason: "SSO_DISCOVERY_INVALID" },
      );
    }
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}

/**
 * Starts an OIDC sign-in with the active provider named by `target`. Returns the provider's
 * authorization URL and the binding cookie the server must set.
 */
export async function beginOidcSignIn(
  services: Services,
  target: SsoTarget,
  options: { readonly returnTo?: string } = {},
): Promise<SsoStart> {
  const provider = await findProvider(services, "oidc", target);
  const config = await configure(services, provider);
  const client = await openId();
  const state = randomToken(services);
  const nonce = randomToken(services);
  const codeVerifier = randomToken(services);
  const { oidcRedirectUri } = ssoUrls(services, provider.workspaceId);
  const binding = await saveLoginState(services, {
    key: state,
    workspaceId: provider.workspaceId,
    protocol: "oidc",
    data: {
      providerId: provider.id,
      nonce,
      ...(provider.usePkce ? { codeVerifier } : {}),
      redirectUri: oidcRedirectUri,
      returnTo: safeReturnTo(options.returnTo),
    },
  });
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: oidcRedirectUri,
    scope: provider.scopes.join(" "),
    state,
    nonce,
    ...(provider.usePkce
      ? {
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: "S256",
        }
      : {}),
  });
  return { authorizationUrl: url.href, binding };
}

/** A claim as a string ("" when absent or not a string). */
function claimText(claims: Record<string, unknown>, name: string, fallback: string): string {
  const value = claims[name === "" ? fallback : name];
  return typeof value === "string" ? value : "";
}

/**
 * Completes an OIDC sign-in: `params` is the query of the callback request as received, and
 * `binding` the value of the binding cookie. Returns the new session's tokens.
 *
 * Throws UnauthenticatedError when the response does not check out (unknown, reused or expired
 * state, wrong browser, the provider's error, a bad ID token), PermissionDeniedError or
 * FailedPreconditionError when the identity may not sign in (see identity.ts), and
 * UnavailableError when the provider cannot be reached.
 */
export async function finishOidcSignIn(
  services: Services,
  callback: {
    readonly params: URLSearchParams | Readonly<Record<string, string>>;
    readonly binding?: string;
  },
  request: RequestFacts,
): Promise<SsoFinish> {
  const params = new URLSearchParams(callback.params as Record<string, string>);
  const stateValue = params.get("state") ?? "";
  const state =
    stateValue === "" ? null : await takeLoginState(services, stateValue, "oidc", callback.binding);
  if (!state) {
    throw new UnauthenticatedError(
      "this sign-in is unknown, expired, already used or was started in another browser: start again",
      { reason: "SSO_STATE_INVALID" },
    );
  }
  const idpError = params.get("error");
  if (idpError !== null) {
    const detail = params.get("error_description");
    throw new UnauthenticatedError(
      `the identity provider refused the sign-in: ${idpError}${detail ? ` (${detail})` : ""}`,
      { reason: "SSO_PROVIDER_ERROR" },
    );
  }
  const provider = await services.storage.oidcProviders.findById(state.data.providerId ?? "");
  if (!provider?.isActive || provider.workspaceId !== state.workspaceId) {
    throw new UnauthenticatedError("the identity provider of this sign-in is no longer active", {
      reason: "SSO_PROVIDER_INACTIVE",
    });
  }
  const config = await configure(services, provider);
  const client = await openId();
  const currentUrl = new URL(
    state.data.redirectUri ?? ssoUrls(services, provider.workspaceId).oidcRedirectUri,
  );
  for (const [key, value] of params) currentUrl.searchParams.append(key, value);

  let claims: Record<string, unknown>;
  try {
    const tokens = await client.authorizationCodeGrant(config, currentUrl, {
      ...(state.data.codeVerifier ? { pkceCodeVerifier: state.data.codeVerifier } : {}),
      expectedState: stateValue,
      expectedNonce: state.data.nonce ?? "",
      idTokenExpected: true,
    });
    const idToken = tokens.claims();
    if (!idToken) throw new Error("the token response has no ID token");
    claims = { ...idToken };
    // Scope-based claims (email, profile) often come from UserInfo only.
    const wanted = [provider.emailClaim || "email", provider.nameClaim || "name"];
    if (wanted.some((name) => claims[name] === undefined) && config.serverMetadata().userinfo_endpoint) {
      const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
      claims = { ...info, ...idToken };
    }
  } catch (error) {
    if (error instanceof PlatformError) throw error;
    const unreachable = error instanceof TypeError && /fetch/i.test(error.message);
    if (unreachable) {
      throw new UnavailableError(`the identity provider cannot be reached: ${describe(error)}`, {
        reason: "SSO_PROVIDER_UNREACHABLE",
        cause: error,
      });
    }
    throw new UnauthenticatedError(`the identity provider's answer did not check out: ${describe(error)}`, {
      reason: "SSO_OIDC_REJECTED",
      cause: error,
    });
  }

  const verified = claims.email_verified;
  const identity: ExternalIdentity = {
    workspaceId: provider.workspaceId,
    protocol: "oidc",
    providerRecordId: provider.id,
    providerId: `${String(claims.iss)}|${String(claims.sub)}`,
    email: claimText(claims, provider.emailClaim, "email"),
    emailVerified:
      verified === true || verified === "true"
        ? true
        : verified === false || verified === "false"
          ? false
          : undefined,
    name: claimText(claims, provider.nameClaim, "name"),
    username: claimText(claims, provider.usernameClaim, "preferred_username"),
    picture: claimText(claims, provider.pictureClaim, "picture"),
    allowJitProvisioning: provider.allowJitProvisioning,
  };
  const signIn = await signInExternalIdentity(services, identity, request);
  return { ...signIn, returnTo: state.data.returnTo ?? "/" };
}

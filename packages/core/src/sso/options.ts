/**
 * How single sign-on reaches the outside world: the public address identity providers send
 * browsers back to, the fetch used for discovery, tokens and SAML metadata, and the timeouts.
 * Every field has a documented default.
 *
 * @module
 */
import { accountConfig } from "../auth/account-config.js";
import {
  createFailureMemory,
  createOutboundFetch,
  type FailureMemory,
  type OutboundFetch,
} from "../lib/outbound-fetch.js";
import { integrationsOf } from "../operations/integrations.js";
import type { Services } from "../operations/services.js";

export interface SsoOptions {
  /**
   * The public address of the API as browsers and identity providers reach it, without a
   * trailing slash. Default: `publicBaseUrl` of the platform config (a web app that proxies `/v1`).
   */
  readonly baseUrl?: string;
  /**
   * Makes the HTTP requests to identity providers. Default: the outbound fetch
   * (lib/outbound-fetch.ts) with the limits below: bounded bodies, timeouts, public addresses only.
   */
  readonly fetch?: OutboundFetch;
  /**
   * Non-public networks identity providers may be reached on (CIDR, e.g. `10.0.0.0/8`); default
   * none: loopback, private, link-local and unique-local addresses are refused.
   */
  readonly allowNetworks?: readonly string[];
  /** Largest answer read from an identity provider, after decoding. Default 1 MiB. */
  readonly maxResponseBytes?: number;
  /** Time to connect to an identity provider. Default 5 s. */
  readonly connectTimeoutSeconds?: number;
  /** How long a failed fetch of a provider's document is answered from memory. Default 30 s. */
  readonly failureCacheSeconds?: number;
  /**
   * Lets OIDC issuers and SAML metadata URLs use plain `http://` (development, tests). Default
   * false: the server only talks HTTPS to identity providers.
   */
  readonly allowInsecureHttp?: boolean;
  /** How long a browser may spend at the identity provider. Default 600 s. */
  readonly loginTtlSeconds?: number;
  /** How long fetched SAML metadata is reused before it is fetched again. Default 3600 s. */
  readonly metadataTtlSeconds?: number;
  /** Accepted clock difference with a SAML identity provider. Default 120 s. */
  readonly clockSkewSeconds?: number;
  /** Time limit of each request to an identity provider. Default 10 s. */
  readonly requestTimeoutSeconds?: number;
}

/** {@link SsoOptions} with the defaults filled in. */
export interface ResolvedSsoOptions {
  readonly baseUrl: string;
  readonly fetch: OutboundFetch;
  /**
   * Providers' documents that could not be read or used (discovery, metadata), remembered for
   * `failureCacheSeconds`: anonymous sign-in starts do not make the server fetch them in a loop.
   */
  readonly documentFailures: FailureMemory<Error>;
  readonly allowInsecureHttp: boolean;
  readonly loginTtlSeconds: number;
  readonly metadataTtlSeconds: number;
  readonly clockSkewSeconds: number;
  readonly requestTimeoutSeconds: number;
}

export function ssoOptions(services: Services): ResolvedSsoOptions {
  const options = integrationsOf(services).sso ?? noOptions;
  const clients = services.state.sso.of(options);
  return {
    baseUrl: (options.baseUrl ?? accountConfig(services).publicBaseUrl).replace(/\/+$/, ""),
    fetch: clients.fetch,
    documentFailures: clients.documentFailures,
    allowInsecureHttp: options.allowInsecureHttp ?? false,
    loginTtlSeconds: options.loginTtlSeconds ?? 600,
    metadataTtlSeconds: options.metadataTtlSeconds ?? 3600,
    clockSkewSeconds: options.clockSkewSeconds ?? 120,
    requestTimeoutSeconds: options.requestTimeoutSeconds ?? 10,
  };
}

const noOptions: SsoOptions = {};

/** The fetch and failure memory single sign-on uses, made for one options object. */
interface SsoClients {
  readonly fetch: OutboundFetch;
  readonly documentFailures: FailureMemory<Error>;
}

/**
 * What single sign-on keeps per platform (`services.state.sso`): its outbound fetch and document
 * failures, whose failure caches must outlive a single call. Made anew if the options change.
 */
export interface SsoClientCache {
  of(options: SsoOptions): SsoClients;
}

export function createSsoClientCache(): SsoClientCache {
  let made: { readonly options: SsoOptions; readonly clients: SsoClients } | undefined;
  return {
    of(options) {
      if (made?.options !== options) made = { options, clients: ssoClientsFor(options) };
      return made.clients;
    },
  };
}

function ssoClientsFor(options: SsoOptions): SsoClients {
  return {
    fetch:
      options.fetch ??
      createOutboundFetch({
        ...(options.allowNetworks && { allowNetworks: options.allowNetworks }),
        ...(options.maxResponseBytes !== undefined && { maxResponseBytes: options.maxResponseBytes }),
        ...(options.connectTimeoutSeconds !== undefined && {
          connectTimeoutMs: options.connectTimeoutSeconds * 1000,
        }),
        totalTimeoutMs: (options.requestTimeoutSeconds ?? 10) * 1000,
        ...(options.failureCacheSeconds !== undefined && {
          failureCacheMs: options.failureCacheSeconds * 1000,
        }),
      }),
    documentFailures: createFailureMemory<Error>((options.failureCacheSeconds ?? 30) * 1000),
  };
}

/**
 * The URLs of the SSO endpoints the server serves (not RPCs), as identity providers are told them.
 * The OIDC redirect URI is the same for every workspace: the `state` says which sign-in it is.
 */
export function ssoUrls(services: Services, workspaceId: string) {
  const { baseUrl } = ssoOptions(services);
  return {
    oidcRedirectUri: `${baseUrl}/v1/sso/oidc/callback`,
    /** The SAML service provider's entity id is the address of its metadata. */
    samlEntityId: `${baseUrl}/v1/sso/saml/${workspaceId}/metadata`,
    samlMetadataUrl: `${baseUrl}/v1/sso/saml/${workspaceId}/metadata`,
    samlAcsUrl: `${baseUrl}/v1/sso/saml/${workspaceId}/acs`,
  };
}

/** True when the server may send requests to `url`: HTTPS, or HTTP when allowed. */
export function isAllowedIdpUrl(url: URL, options: Pick<ResolvedSsoOptions, "allowInsecureHttp">): boolean {
  if (url.protocol === "https:") return true;
  return url.protocol === "http:" && options.allowInsecureHttp;
}

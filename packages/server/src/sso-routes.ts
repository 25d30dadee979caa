/**
 * The browser endpoints of single sign-on (not RPCs), on the core sign-in functions:
 *
 * - `GET  /v1/sso/oidc/{providerId}/start[?returnTo=/path]`: a page naming the IdP's host and the
 *   workspace, with the link to continue there (never a redirect), binding cookie set
 * - `GET  /v1/sso/oidc/callback`: the redirect URI registered at the IdP
 * - `GET  /v1/sso/saml/{workspaceId}/metadata`: the SP metadata (its URL is the SP entity id)
 * - `GET  /v1/sso/saml/{providerId}/start[?returnTo=/path]`: the same page, its link carrying the
 *   AuthnRequest
 * - `POST /v1/sso/saml/{workspaceId}/acs`: the IdP's form post (`SAMLResponse`)
 *
 * A finished sign-in sets the `session` cookie as Login does and sends the browser (303) to the
 * web app at `publicBaseUrl` plus the `returnTo` path: tokens never go in a URL. A failed one
 * answers an HTML page (browsers) or google.rpc.Status JSON, with the error's HTTP status.
 *
 * The binding cookie ties a callback to the browser that started the sign-in (core
 * login-state.ts); its path is the callback's only. OIDC's is `SameSite=Lax` (the callback is a
 * top-level GET). SAML's is `SameSite=None; Secure`, since the IdP posts the response cross-site:
 * browsers keep such cookies over HTTPS (and on localhost) only, so SAML needs TLS, at this
 * server or a proxy in front of it, unless the IdP is same-site.
 *
 * @module
 */
import { InvalidArgumentError, NotFoundError } from "@wap/core";
import {
  type BrowserBinding,
  beginOidcSignIn,
  beginSamlSignIn,
  bindingCookieName,
  finishOidcSignIn,
  finishSamlSignIn,
  type Services,
  type SsoFinish,
  samlServiceProviderMetadata,
  ssoUrls,
} from "@wap/core/internal";
import { type Context, Hono } from "hono";
import { generateCookie, getCookie } from "hono/cookie";
import { cookieSettings, type EdgeRequest, type EdgeSettings } from "./edge.js";
import { admitted, type Env, isUuid, requestFacts } from "./endpoint-edge.js";
import { errorResponse, failureStatus } from "./error-responses.js";
import { answerNoted, type PublicError } from "./errors.js";
import { readBodyText } from "./read-body.js";
import { refreshCookie, sessionCookie } from "./session-cookie.js";

export interface SsoRouteSettings {
  readonly edge: EdgeSettings;
  /** Largest ACS form accepted, in bytes. */
  readonly bodyLimitBytes: number;
}

const noStore = { "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" } as const;
const formType = "application/x-www-form-urlencoded";

/** The SSO endpoints, to mount before the REST catch-all. */
export function ssoRoutes(settings: SsoRouteSettings): Hono<Env> {
  const app = new Hono<Env>();
  const services = () => settings.edge.platform.services;

  app.get("/v1/sso/oidc/:providerId/start", (c) =>
    browserEndpoint(c, settings, async () => {
      const providerId = c.req.param("providerId");
      if (!isUuid(providerId)) throw noProvider();
      const start = await beginOidcSignIn(services(), { providerId }, returnTo(c));
      const path = new URL(ssoUrls(services(), "").oidcRedirectUri).pathname;
      const provider = await services().storage.oidcProviders.findById(providerId);
      return continuePage(services(), start.authorizationUrl, provider?.workspaceId ?? "", [
        bindingCookie(start.binding, path, secure(settings)),
      ]);
    }),
  );

  app.get("/v1/sso/oidc/callback", (c) =>
    browserEndpoint(c, settings, async (edge) => {
      const binding = getCookie(c, bindingCookieName);
      const finish = await finishOidcSignIn(
        services(),
        { params: new URL(c.req.url).searchParams, ...(binding !== undefined && { binding }) },
        requestFacts(edge),
      );
      const path = new URL(ssoUrls(services(), finish.workspaceId).oidcRedirectUri).pathname;
      return signedIn(settings, edge, finish, clearedBindingCookie(path, "lax", secure(settings)));
    }),
  );

  app.get("/v1/sso/saml/:workspaceId/metadata", (c) =>
    browserEndpoint(c, settings, async () => {
      const workspaceId = c.req.param("workspaceId");
      if (!isUuid(workspaceId)) throw noProvider();
      const xml = await samlServiceProviderMetadata(services(), workspaceId);
      return new Response(xml, {
        status: 200,
        headers: {
          "Content-Type": "application/samlmetadata+xml; charset=utf-8",
          "Cache-Control": "no-cache",
        },
      });
    }),
  );

  app.get("/v1/sso/saml/:providerId/start", (c) =>
    browserEndpoint(c, settings, async () => {
      const providerId = c.req.param("providerId");
      if (!isUuid(providerId)) throw noProvider();
      const start = await beginSamlSignIn(services(), { providerId }, returnTo(c));
      const provider = await services().storage.samlProviders.findById(providerId);
      // Deleted since the sign-in started: it could not finish anyway.
      if (!provider) throw noProvider();
      const acs = new URL(ssoUrls(services(), provider.workspaceId).samlAcsUrl).pathname;
      return continuePage(services(), start.authorizationUrl, provider.workspaceId, [
        bindingCookie(start.binding, acs, true),
      ]);
    }),
  );

  app.post("/v1/sso/saml/:workspaceId/acs", (c) =>
    browserEndpoint(c, settings, async (edge) => {
      const workspaceId = c.req.param("workspaceId");
      const form = await readForm(c, settings.bodyLimitBytes);
      const samlResponse = form.get("SAMLResponse") ?? "";
      if (samlResponse === "") {
        throw new InvalidArgumentError("the form has no SAMLResponse", { reason: "SAML_RESPONSE_MISSING" });
      }
      if (!isUuid(workspaceId)) throw noProvider();
      const binding = getCookie(c, bindingCookieName);
      // RelayState is not used: where to go afterwards was stored with the sign-in's state.
      const finish = await finishSamlSignIn(
        services(),
        { workspaceId, samlResponse, ...(binding !== undefined && { binding }) },
        requestFacts(edge),
      );
      const path = new URL(ssoUrls(services(), workspaceId).samlAcsUrl).pathname;
      return signedIn(settings, edge, finish, clearedBindingCookie(path, "none", true));
    }),
  );

  return app;
}

/** Runs an endpoint: the edge's refusal first, and every failure answered without internals. */
async function browserEndpoint(
  c: Context<Env>,
  settings: SsoRouteSettings,
  run: (edge: EdgeRequest) => Promise<Response>,
): Promise<Response> {
  const { edge, refusal } = admitted(c);
  let response: Response;
  try {
    if (refusal) throw refusal;
    response = await run(edge);
    edge.code = "ok";
  } catch (error) {
    const answer = browserError(error, edge, settings);
    const status = failureStatus(error, answer);
    const html = /\btext\/html\b/i.test(c.req.header("accept") ?? "");
    response = html
      ? errorPage(answer, status, edge.requestId, settings.edge.platform.services.config.publicBaseUrl)
      : errorResponse(answer, { status, headers: noStore });
  }
  keepEdgeCookies(c, response);
  return response;
}

/**
 * What the browser is told. Sign-in refusals say why (state, signature, audience...); an
 * unreachable identity provider is described in the log only (addresses, network errors).
 */
function browserError(error: unknown, edge: EdgeRequest, settings: SsoRouteSettings): PublicError {
  const answer = answerNoted(edge, error, settings.edge.logger);
  // A provider configured wrongly is told as such: the admin reading it can fix it.
  if (answer.code !== "unavailable" || answer.reason === "SSO_DISCOVERY_INVALID") return answer;
  settings.edge.logger.warn("single sign-on failed", { requestId: edge.requestId, error: answer.message });
  return {
    ...answer,
    message: `the identity provider cannot be reached right now; try again shortly (request id ${edge.requestId})`,
  };
}

/** The session cookie and the redirect to the web app. */
function signedIn(
  settings: SsoRouteSettings,
  edge: EdgeRequest,
  finish: SsoFinish,
  clearBinding: string,
): Response {
  const home = settings.edge.platform.services.config.publicBaseUrl.replace(/\/+$/, "");
  const cookies = cookieSettings(settings.edge, edge);
  const session = sessionCookie(finish.accessToken, cookies);
  const refresh = refreshCookie(finish.refreshToken, cookies);
  // 303: after the ACS's POST the browser GETs the web app. `returnTo` is a path (core checked).
  return redirect(`${home}${finish.returnTo}`, 303, [session, refresh, clearBinding]);
}

/**
 * The page a sign-in start answers instead of redirecting: the identity provider's address is
 * whatever a workspace admin configured, so the browser is not sent there from our domain
 * without the user seeing where it goes. The page names the provider's host and the workspace,
 * and links there; the binding cookie is set here already.
 */
async function continuePage(
  services: Services,
  authorizationUrl: string,
  workspaceId: string,
  cookies: readonly string[],
): Promise<Response> {
  const workspace = workspaceId === "" ? null : await services.storage.workspaces.findById(workspaceId);
  const host = new URL(authorizationUrl).host;
  const name = workspace?.name ?? "this workspace";
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Continue to ${escapeHtml(host)}</title></head>
<body><h1>Sign in with your organisation</h1>
<p>The workspace <strong>${escapeHtml(name)}</strong> signs its members in at
<strong>${escapeHtml(host)}</strong>. Continue only if you expected to sign in there.</p>
<p><a id="continue" href="${escapeHtml(authorizationUrl)}">Continue to ${escapeHtml(host)}</a></p>
</body></html>
`;
  const headers = new Headers({
    ...noStore,
    "Content-Type": "text/html; charset=utf-8",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
  });
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return new Response(body, { status: 200, headers });
}

function redirect(location: string, status: 302 | 303, cookies: readonly string[]): Response {
  const headers = new Headers({ ...noStore, Location: location });
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return new Response(null, { status, headers });
}

/** `Secure` for the OIDC cookie: the server speaks TLS, or browsers reach it by https. */
function secure(settings: SsoRouteSettings): boolean {
  if (settings.edge.secure) return true;
  return new URL(ssoUrls(settings.edge.platform.services, "").oidcRedirectUri).protocol === "https:";
}

function bindingCookie(binding: BrowserBinding, path: string, secureCookie: boolean): string {
  return generateCookie(binding.cookieName, binding.value, {
    httpOnly: true,
    sameSite: binding.sameSite === "none" ? "None" : "Lax",
    path,
    maxAge: Math.max(0, Math.floor(binding.maxAgeSeconds)),
    // SameSite=None cookies without Secure are dropped by browsers.
    secure: secureCookie || binding.sameSite === "none",
  });
}

function clearedBindingCookie(path: string, sameSite: "lax" | "none", secureCookie: boolean): string {
  return bindingCookie(
    { cookieName: bindingCookieName, value: "", maxAgeSeconds: 0, sameSite, path },
    path,
    secureCookie,
  );
}

function returnTo(c: Context<Env>): { returnTo?: string } {
  const value = c.req.query("returnTo");
  return value === undefined ? {} : { returnTo: value };
}

function noProvider(): NotFoundError {
  return new NotFoundError("no SSO provider matches this sign-in", { reason: "SSO_PROVIDER_NOT_FOUND" });
}

async function readForm(c: Context<Env>, limitBytes: number): Promise<URLSearchParams> {
  const type = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== formType) {
    throw new InvalidArgumentError(`the ACS takes an HTML form post (Content-Type: ${formType})`, {
      reason: "SAML_FORM_EXPECTED",
    });
  }
  return new URLSearchParams(await readBodyText(c.req.raw, limitBytes));
}

/**
 * The edge may have set a cookie already (clearing a stale session); Node lets the response's own
 * `Set-Cookie` replace it, so it is carried over unless this answer sets the session itself.
 */
function keepEdgeCookies(c: Context<Env>, response: Response): void {
  const earlier = c.env.outgoing.getHeader("set-cookie");
  if (earlier === undefined) return;
  const mine = response.headers.getSetCookie();
  if (mine.some((cookie) => cookie.startsWith("session="))) return;
  for (const cookie of Array.isArray(earlier) ? earlier : [String(earlier)]) {
    response.headers.append("Set-Cookie", cookie);
  }
}

const htmlEscapes: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => htmlEscapes[ch]!);

function errorPage(answer: PublicError, status: number, requestId: string, publicBaseUrl: string): Response {
  const home = escapeHtml(`${publicBaseUrl.replace(/\/+$/, "")}/`);
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign-in failed</title></head>
<body><h1>Sign-in failed</h1>
<p>${escapeHtml(answer.message)}</p>
<p><a href="${home}">Back to the sign-in page</a></p>
<p><small>${escapeHtml(answer.reason)} &middot; request id ${escapeHtml(requestId)}</small></p>
</body></html>
`;
  return new Response(body, {
    status,
    headers: {
      ...noStore,
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": "default-src 'none'",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

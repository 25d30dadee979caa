/**
 * Cross-site request forgery protection for cookie-authenticated requests. Browsers attach the
 * `session` cookie on their own, so a state-changing request that rides on it must come from our
 * own origin (or one the operator allows), and must be a request that a foreign page could not
 * send without a CORS preflight: a JSON/protobuf/gRPC content type, or the Connect-Protocol-Version
 * header. Bearer tokens are never sent by a browser on its own, so they are exempt.
 *
 * @module
 */
import { PermissionDeniedError } from "@wap/core";

const safeMethods = new Set(["GET", "HEAD", "OPTIONS"]);

// Content types an HTML form or a no-cors fetch cannot send; a cross-origin page needs a preflight.
const preflightedContentType =
  /^application\/(json|proto|connect\+json|connect\+proto|grpc(-web(-text)?)?(\+[a-z]+)?)$/i;

export interface CsrfFacts {
  readonly method: string;
  /** Our own origin as this request reached us, e.g. `https://wap.example.com`. */
  readonly ownOrigin: string;
  readonly origin: string | undefined;
  readonly secFetchSite: string | undefined;
  readonly contentType: string | undefined;
  readonly hasConnectProtocolVersion: boolean;
}

/** Returns the error to answer with, or undefined when the request may go on. */
export function checkCsrf(
  facts: CsrfFacts,
  allowedOrigins: ReadonlySet<string>,
): PermissionDeniedError | undefined {
  if (safeMethods.has(facts.method)) return undefined;
  const refuse = (why: string) =>
    new PermissionDeniedError(`cross-site request refused: ${why}`, { reason: "CSRF_CHECK_FAILED" });

  const crossSite = crossSiteRefusal(facts, allowedOrigins, "to use the session cookie");
  if (crossSite !== undefined) return crossSite;

  const mediaType = facts.contentType?.split(";")[0]?.trim() ?? "";
  if (!facts.hasConnectProtocolVersion && !preflightedContentType.test(mediaType)) {
    return refuse(
      "with the session cookie, send Content-Type: application/json (or a protobuf/gRPC type) or the Connect-Protocol-Version header",
    );
  }
  return undefined;
}

/**
 * The refusal of a request a page of another site made (its `Origin`, else its
 * `Sec-Fetch-Site`), or undefined for our own pages, allowed origins and non-browser clients.
 * `purpose` ends the message: "origin X is not allowed <purpose>".
 */
export function crossSiteRefusal(
  facts: Pick<CsrfFacts, "ownOrigin" | "origin" | "secFetchSite">,
  allowedOrigins: ReadonlySet<string>,
  purpose: string,
): PermissionDeniedError | undefined {
  const refuse = (why: string) =>
    new PermissionDeniedError(`cross-site request refused: ${why}`, { reason: "CSRF_CHECK_FAILED" });
  if (facts.origin !== undefined) {
    const origin = facts.origin.toLowerCase();
    if (origin !== facts.ownOrigin.toLowerCase() && !allowedOrigins.has(origin)) {
      return refuse(`origin ${facts.origin} is not allowed ${purpose}`);
    }
  } else if (
    facts.secFetchSite !== undefined &&
    facts.secFetchSite !== "same-origin" &&
    facts.secFetchSite !== "none"
  ) {
    return refuse(`Sec-Fetch-Site is ${facts.secFetchSite}`);
  }
  return undefined;
}

const samlAcsPath = /^\/v1\/sso\/saml\/[^/]+\/acs$/;

/**
 * The only endpoints exempt from the check: cross-site by design, and neither acts as the
 * cookie's user. The SAML ACS receives the IdP page's form post (it proves itself by the signed
 * assertion and the binding cookie); the billing webhook is the provider's server (signed body).
 */
export function isCsrfExempt(method: string, path: string): boolean {
  return method === "POST" && (path === "/v1/billing/webhook" || samlAcsPath.test(path));
}

/** Normalizes `WAP_ALLOWED_ORIGINS` entries to what browsers send in `Origin` (no trailing slash). */
export function normalizeOrigins(origins: readonly string[]): Set<string> {
  return new Set(origins.map((o) => o.trim().replace(/\/+$/, "").toLowerCase()).filter((o) => o !== ""));
}

/**
 * The validation rules of SSOService requests, each bound written once (and property-tested on
 * both sides in test/sso-validation.test.ts).
 *
 * @module
 */
import * as z from "zod";
import { text } from "../validation/rules.js";

/** Provider names: 1 to 256 characters. */
export const providerName = text({ min: 1, max: 256 });
/** OIDC client ids: 1 to 500 characters. */
export const clientId = text({ min: 1, max: 500 });
/** OIDC client secrets: 1 to 1000 characters. */
export const clientSecret = text({ min: 1, max: 1000 });
/** One OIDC scope: 1 to 100 characters. */
export const scope = text({ min: 1, max: 100 });
/** OIDC scopes: 1 to 20 of them, on every UpdateOIDCProvider call (repeated fields have no presence). */
export const scopes = z.array(scope).min(1, "must have 1 to 20 items").max(20, "must have 1 to 20 items");
/**
 * A claim or attribute name. The contract sets no bound; 256 is a server limit (names are short,
 * and they are stored).
 */
export const claimName = text({ max: 256 });

/** RFC 3986 URI characters after a scheme: unreserved, reserved, and well-formed percent escapes. */
const absoluteUriPattern =
  /^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

/**
 * An absolute URI (RFC 3986, with a scheme), as the contract's `uri` rule; at most 2048
 * characters (a server limit). HTTPS is not required here: the identity provider's URL is
 * checked when a sign-in uses it (see sso/options.ts).
 */
export const absoluteUri = text({ max: 2048 }).refine((value) => absoluteUriPattern.test(value), {
  message: "must be an absolute URI (RFC 3986, with a scheme)",
});

/** True for an `http:` or `https:` URL with a host: what discovery and metadata fetches need. */
export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== "";
  } catch {
    return false;
  }
}

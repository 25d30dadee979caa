/**
 * Reasons of single sign-on (OIDC and SAML providers, sign-in through them).
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const ssoReasons = {
  SSO_REQUIRED: {
    code: "failed_precondition",
    description:
      "The email's domain enforces single sign-on; sign in through the organisation's identity provider.",
  },
  SSO_PROVIDER_NOT_FOUND: {
    code: "not_found",
    description: "No active SSO provider matches this sign-in; check the workspace's provider configuration.",
  },
  SSO_PROVIDER_INACTIVE: {
    code: "unauthenticated",
    description: "The provider a sign-in was started with is no longer active; start the sign-in again.",
  },
  SSO_PROVIDER_ERROR: {
    code: "unauthenticated",
    description:
      "The identity provider refused the sign-in (its error is in the message); fix that at the provider.",
  },
  SSO_PROVIDER_UNREACHABLE: {
    code: "unavailable",
    description: "The identity provider could not be reached; retry shortly.",
  },
  SSO_STATE_INVALID: {
    code: "unauthenticated",
    description: "The sign-in is unknown, expired, used or was started in another browser; start it again.",
  },
  SSO_NO_EMAIL: {
    code: "permission_denied",
    description: "The identity provider sent no email address; configure its email claim or attribute.",
  },
  SSO_EMAIL_NOT_VERIFIED: {
    code: "permission_denied",
    description: "The identity provider says the email address is not verified; verify it there.",
  },
  SSO_DOMAIN_NOT_VERIFIED: {
    code: "permission_denied",
    description: "The email's domain is not a verified domain of the workspace; verify the domain first.",
  },
  SSO_JIT_DISABLED: {
    code: "permission_denied",
    description:
      "No account uses the email and the workspace does not create accounts at sign-in; invite the user first.",
  },
  ACCOUNT_EMAIL_NOT_VERIFIED: {
    code: "failed_precondition",
    description:
      "An account with the email exists but has not verified it; verify it, then sign in through SSO.",
  },
  SSO_INSECURE_ISSUER: {
    code: "failed_precondition",
    description: "The OIDC issuer URL is not https; configure an https issuer.",
  },
  SSO_DISCOVERY_FAILED: {
    code: "unavailable",
    description: "The issuer's OpenID configuration could not be read; check the issuer URL, or retry.",
  },
  SSO_DISCOVERY_INVALID: {
    code: "unavailable",
    description:
      "The issuer's OpenID configuration lacks a usable field (named in the message); fix it at the provider.",
  },
  SSO_OIDC_REJECTED: {
    code: "unauthenticated",
    description:
      "The identity provider's answer did not check out (token, signature, nonce); start the sign-in again.",
  },
  OIDC_PROVIDER_NOT_CONFIGURED: {
    code: "not_found",
    description: "The workspace has no OIDC provider; configure one first.",
  },
  SAML_PROVIDER_NOT_CONFIGURED: {
    code: "not_found",
    description: "The workspace has no SAML provider; configure one first.",
  },
  SSO_INSECURE_METADATA_URL: {
    code: "failed_precondition",
    description: "The SAML metadata URL is not https; configure an https URL.",
  },
  SSO_METADATA_UNAVAILABLE: {
    code: "unavailable",
    description: "The SAML metadata could not be read; check the metadata URL, or retry.",
  },
  SAML_RESPONSE_REJECTED: {
    code: "unauthenticated",
    description:
      "The SAML response did not validate (signature, audience, time); check the provider's configuration.",
  },
  SAML_RESPONSE_MISSING: {
    code: "invalid_argument",
    description: "The form posted to the ACS has no SAMLResponse.",
  },
  SAML_FORM_EXPECTED: {
    code: "invalid_argument",
    description: "The ACS was called with another body than an HTML form post; post the form.",
  },
} as const satisfies ReasonTable;

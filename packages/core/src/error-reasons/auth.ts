/**
 * Reasons of sign-in, tokens, credentials (passwords, passkeys, backup codes) and accounts.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const authReasons = {
  INVALID_ACCESS_TOKEN: {
    code: "unauthenticated",
    description: "The access token is invalid or expired; refresh it or sign in again.",
  },
  SESSION_ENDED: {
    code: "unauthenticated",
    description:
      "The sign-in session behind the credential has ended (signed out or revoked); sign in again.",
  },
  INVALID_SERVICE_ACCOUNT_TOKEN: {
    code: "unauthenticated",
    description:
      "The service account token is invalid, expired or revoked, or its account was deleted; issue a new token.",
  },
  EMAIL_NOT_VERIFIED: {
    code: "failed_precondition",
    description: "The account's email address is not verified yet; follow the link mailed to it, then retry.",
  },
  USERNAME_TAKEN: {
    code: "already_exists",
    description: "Another account uses this username; pick another.",
  },
  INVALID_LOGIN: {
    code: "unauthenticated",
    description:
      "The email and password do not match an account; check them (the answer does not say which is wrong).",
  },
  INVALID_REFRESH_TOKEN: {
    code: "unauthenticated",
    description: "The refresh token is invalid, expired or already used; sign in again.",
  },
  INVALID_TOKEN: {
    code: "invalid_argument",
    description:
      "A mailed token (password reset, email verification) is invalid or expired; ask for a new mail.",
  },
  LOGIN_THROTTLED: {
    code: "resource_exhausted",
    description:
      "Too many failed sign-ins for this account or address; wait the time the message (and Retry-After) gives.",
  },
  INVALID_BACKUP_CODE: {
    code: "unauthenticated",
    description: "The email and backup code do not match, or the code was used already; check them.",
  },
  LAST_SIGN_IN_METHOD: {
    code: "failed_precondition",
    description:
      "Removing this password, passkey or linked account would leave the account no way to sign in; add another method first.",
  },
  INVALID_PASSKEY_RESPONSE: {
    code: "invalid_argument",
    description:
      "The passkey registration sent is not valid for the pending challenge; start the registration again.",
  },
  PASSKEY_EXISTS: {
    code: "already_exists",
    description: "This passkey is registered already; nothing to do.",
  },
  INVALID_PASSKEY_LOGIN: {
    code: "unauthenticated",
    description:
      "The passkey assertion did not verify (unknown key, wrong challenge, bad signature); sign in again.",
  },
  WRONG_PASSWORD: {
    code: "invalid_argument",
    description: "`currentPassword` is not the account's password; send the current one.",
  },
  NO_PASSWORD: {
    code: "failed_precondition",
    description: "The account has no password to change or remove; set one instead.",
  },
  SOLE_WORKSPACE_OWNER: {
    code: "failed_precondition",
    description:
      "The account is the only owner of some workspaces; transfer ownership or delete them before deleting the account.",
  },
} as const satisfies ReasonTable;

/**
 * Reasons of devices and the CLI login (device codes approved in the browser).
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const deviceReasons = {
  INVALID_DEVICE_SIGNATURE: {
    code: "unauthenticated",
    description: "The device's signature is invalid, stale or replayed; sign in again.",
  },
  CLI_LOGIN_CANCELLED: {
    code: ["permission_denied", "invalid_argument"],
    description:
      "A wrong user code was entered too often and the CLI login was cancelled; run the login again.",
  },
  CLI_LOGIN_DENIED: {
    code: "permission_denied",
    description: "The CLI login was denied in the browser; run it again if that was a mistake.",
  },
  CLI_LOGIN_LIMIT: {
    code: "resource_exhausted",
    description:
      "Too many CLI logins wait for approval from this client address; approve or let some expire first.",
  },
  CLI_LOGIN_EXPIRED: {
    code: "deadline_exceeded",
    description: "The CLI login was not approved in time; run the login again.",
  },
  INVALID_LOGIN_CODE: {
    code: "invalid_argument",
    description: "The CLI's login code is invalid or has expired; run the login again.",
  },
  INVALID_USER_CODE: {
    code: "invalid_argument",
    description:
      "The user code typed in the browser matches no waiting CLI login; check the code the CLI shows.",
  },
  DEVICE_BOUND_TO_ANOTHER_USER: {
    code: "permission_denied",
    description:
      "The CLI's device id is signed in to another account; sign that account out of the CLI first.",
  },
} as const satisfies ReasonTable;

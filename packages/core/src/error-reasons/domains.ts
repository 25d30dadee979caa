/**
 * Reasons of domain claims and their DNS verification.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const domainReasons = {
  DOMAIN_NOT_FOUND: {
    code: "not_found",
    description: "The workspace claims no such domain; check the name.",
  },
  DOMAIN_ALREADY_CLAIMED: {
    code: "already_exists",
    description: "The workspace claims this domain already.",
  },
  DOMAIN_NOT_VERIFIED: {
    code: "failed_precondition",
    description:
      "The verification TXT record was not found; publish it as the message says and verify again once DNS has it.",
  },
  DOMAIN_TOKEN_CHANGED: {
    code: "failed_precondition",
    description: "The verification token changed while the domain was being verified; verify again.",
  },
  DOMAIN_VERIFIED_ELSEWHERE: {
    code: "already_exists",
    description: "Another workspace has verified this domain; a domain belongs to one workspace.",
  },
  DNS_UNAVAILABLE: {
    code: "unavailable",
    description: "The domain's DNS records could not be looked up; retry shortly.",
  },
} as const satisfies ReasonTable;

/**
 * Reasons of just-in-time access requests.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const accessRequestReasons = {
  ACCESS_REQUEST_NOT_FOUND: {
    code: "not_found",
    description:
      "The access request does not exist in this workspace, or the caller neither made it nor may decide it; check its id.",
  },
  NO_REQUESTABLE_GRANT: {
    code: "permission_denied",
    description:
      "The caller holds no on-request grant of this login on this target; ask an admin for one, or check the target and login.",
  },
  ACCESS_REQUEST_NOT_NEEDED: {
    code: "failed_precondition",
    description: "The caller may already log in as this login on this target; no request is needed.",
  },
  SELF_APPROVAL: {
    code: "permission_denied",
    description: "Nobody decides their own access request; another approver must.",
  },
  NOT_AN_APPROVER: {
    code: "permission_denied",
    description:
      "The caller holds none of the roles and is in none of the teams that the grant's policy lets approve; ask one who does.",
  },
  ALREADY_APPROVED_BY_CALLER: {
    code: "failed_precondition",
    description:
      "The caller approved this request already; each approver counts once, so another must approve.",
  },
  ACCESS_REQUEST_DECIDED: {
    code: "failed_precondition",
    description:
      "The request was decided already (approved, denied, withdrawn or ended) and cannot be decided again; make a new request.",
  },
  ACCESS_REQUEST_EXPIRED: {
    code: "failed_precondition",
    description: "The request was not decided within its window and has expired; make a new request.",
  },
  ACCESS_REQUEST_CHANGED: {
    code: "aborted",
    description:
      "The request changed while the call ran (another decision came first); read it and try again.",
  },
} as const satisfies ReasonTable;

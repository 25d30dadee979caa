/**
 * Reasons of workspace members, invitations, teams and service accounts.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const memberReasons = {
  MEMBER_NOT_FOUND: {
    code: "not_found",
    description: "The user is not a member of this workspace; check the id.",
  },
  LAST_OWNER: {
    code: "failed_precondition",
    description: "The change would leave the workspace without an owner; make another member an owner first.",
  },
  OWNER_REQUIRED: {
    code: "permission_denied",
    description: "Only an owner may do this (e.g. grant or remove ownership).",
  },
  INVITATION_NOT_FOUND: {
    code: "not_found",
    description: "The invitation does not exist, was used or has expired; ask for a new one.",
  },
  TEAM_NOT_FOUND: {
    code: "not_found",
    description: "The team does not exist in this workspace; check its id.",
  },
  TEAM_NAME_TAKEN: {
    code: "already_exists",
    description: "Another team of the workspace has this name; pick another.",
  },
  SERVICE_ACCOUNT_NAME_TAKEN: {
    code: "already_exists",
    description: "Another service account of the workspace has this name; pick another.",
  },
} as const satisfies ReasonTable;

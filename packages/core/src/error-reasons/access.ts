/**
 * Reasons of the access check, grants (principals) and workspace quotas.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const accessReasons = {
  ROLE_LACKS_PERMISSION: {
    code: "permission_denied",
    description:
      "The caller's role in the workspace lacks the permission the call needs; ask an owner or admin for a role that has it.",
  },
  WORKSPACE_NOT_FOUND: {
    code: "not_found",
    description: "The workspace does not exist or the caller is not a member of it; check the workspace id.",
  },
  WORKSPACE_QUOTA: {
    code: "resource_exhausted",
    description:
      "The workspace holds as many of these resources as its quota allows; delete some or ask the operator to raise the limit.",
  },
  ACCESS_REVOKED: {
    code: ["unauthenticated", "permission_denied"],
    description:
      "The access a stream was opened with ended (signed out, removed, role changed); sign in again or reopen the stream.",
  },
  PRINCIPAL_NOT_FOUND: {
    code: "not_found",
    description: "The principal does not exist in this workspace; check its id.",
  },
  PRINCIPALS_CHANGED: {
    code: "aborted",
    description: "The target's principals changed while the call ran; send the request again.",
  },
  SUBJECT_NOT_FOUND: {
    code: "not_found",
    description:
      "A user, team or service account named as a subject does not exist in this workspace; check the id.",
  },
} as const satisfies ReasonTable;

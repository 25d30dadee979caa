/**
 * Reasons of the audit log.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const auditReasons = {
  AUDIT_EXPORT_TOO_LARGE: {
    code: "resource_exhausted",
    description:
      "An audit export would hold more events or bytes than one export may; narrow the date range.",
  },
} as const satisfies ReasonTable;

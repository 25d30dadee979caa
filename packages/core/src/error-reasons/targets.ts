/**
 * Reasons of targets (the machines daemons serve).
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const targetReasons = {
  TARGET_NOT_FOUND: {
    code: "not_found",
    description: "The target does not exist in this workspace; check its id.",
  },
  TARGET_NAME_TAKEN: {
    code: "already_exists",
    description: "Another target of the workspace has this name; pick another.",
  },
  TARGET_HAS_DAEMON: {
    code: "failed_precondition",
    description: "A daemon serves the target; delete the daemon before the target.",
  },
} as const satisfies ReasonTable;

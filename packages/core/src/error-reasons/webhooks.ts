/**
 * Reasons of webhook endpoints.
 *
 * @module
 */
import type { ReasonTable } from "./reason-table.js";

export const webhookReasons = {
  WEBHOOK_NOT_FOUND: {
    code: "not_found",
    description: "The webhook endpoint does not exist in this workspace; check its id.",
  },
  WEBHOOK_SEQUENCE_OUT_OF_RANGE: {
    code: "out_of_range",
    description:
      "A replay must start at a sequence number of the workspace's events, from 1 up to the last; read the endpoint's latestSequence.",
  },
} as const satisfies ReasonTable;

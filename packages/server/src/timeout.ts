/**
 * `Connect-Timeout-Ms` on REST paths, read as connect-node reads it on RPC paths: at most ten
 * digits, in milliseconds.
 *
 * @module
 */
import { InvalidArgumentError } from "@wap/core";

/** The deadline a request asks for, or undefined when it sets none. */
export function parseTimeoutMs(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  if (!/^\d{1,10}$/.test(header)) {
    throw new InvalidArgumentError(
      `Connect-Timeout-Ms must be a positive integer of at most 10 digits: got "${header}"`,
      {
        reason: "INVALID_TIMEOUT",
      },
    );
  }
  return Number(header);
}

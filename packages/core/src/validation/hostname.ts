/**
 * The `hostname` rule of the contract (protovalidate's): labels of 1 to 63 characters from
 * [A-Za-z0-9-] that neither start nor end with '-', at most 253 characters in all, an optional
 * trailing dot, and a last label that is not all digits.
 *
 * @module
 */
import * as z from "zod";

const label = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

/** True when `value` is a hostname by the contract's rule. */
export function isHostname(value: string): boolean {
  if (value.length > 253) return false;
  const labels = (value.endsWith(".") ? value.slice(0, -1) : value).split(".");
  for (const part of labels) {
    if (part.length === 0 || part.length > 63 || !label.test(part)) return false;
  }
  return !/^[0-9]+$/.test(labels[labels.length - 1] ?? "");
}

/** A hostname, normalised to lower case without the trailing dot (how domains are stored). */
export const hostname = z
  .string()
  .refine(isHostname, { message: "must be a hostname" })
  .transform((value) => value.replace(/\.$/, "").toLowerCase());

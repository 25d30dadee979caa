/**
 * The `hostname` rule of the contract (protovalidate's): labels of 1 to 63 characters from
 * [A-Za-z0-9-] that neither start nor end with '-', at most 253 characters in all, an optional
 * trailing dot, and a last label that is not all digits.
 *
 * @module
 */
import { isHostname } from "@wap/ssh-wire/forms";
import * as z from "zod";

export { isHostname };

/** A hostname, normalised to lower case without the trailing dot (how domains are stored). */
export const hostname = z
  .string()
  .refine(isHostname, { message: "must be a hostname" })
  .transform((value) => value.replace(/\.$/, "").toLowerCase());

/**
 * The validation rules of the contract, written once. Operation schemas are composed from these
 * so that each bound of the spec lives in exactly one place (and one property test).
 *
 * Lengths count Unicode code points, as the contract defines them, not UTF-16 units.
 *
 * @module
 */
import type { DescEnum } from "@bufbuild/protobuf";
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";
import * as z from "zod";
import { boundRegistry } from "./bound.js";

/** Number of Unicode code points in `value`. */
export function codePointLength(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

// Characters no name or other free text may hold; clients write such text into files other
// programs parse (ssh_config, known_hosts) and print it to terminals. Defined with the other forms
// the clients check again.
import { hasControlCharacters } from "@wap/ssh-wire/forms";

export { controlCharacters, hasControlCharacters } from "@wap/ssh-wire/forms";

/**
 * A string of `min` to `max` code points (no upper bound without `max`), optionally matching
 * `pattern`, with no control characters ({@link controlCharacters}). Only fields that carry
 * encoded data rather than text for people (PEM, JSON, passwords) set `controlCharacters:
 * "allowed"`; NUL is refused everywhere.
 */
export function text(options: {
  min?: number;
  max?: number;
  pattern?: RegExp;
  patternHint?: string;
  controlCharacters?: "allowed";
}) {
  const min = options.min ?? 0;
  const max = options.max ?? Number.POSITIVE_INFINITY;
  const plain = options.controlCharacters !== "allowed";
  let schema = z.string().superRefine((value, ctx) => {
    // NUL cannot be stored in PostgreSQL text, and no name or description needs it.
    if (value.includes("\u0000")) {
      ctx.addIssue({ code: "custom", message: "must not contain NUL characters" });
      return;
    }
    if (plain && hasControlCharacters(value)) {
      ctx.addIssue({
        code: "custom",
        message:
          "must not contain control characters (line breaks, tabs, escape sequences or bidirectional overrides)",
      });
      return;
    }
    const length = codePointLength(value);
    if (length < min || length > max) {
      ctx.addIssue({
        code: "custom",
        message:
          max === Number.POSITIVE_INFINITY
            ? `must be at least ${min} characters (got ${length})`
            : min === 0
              ? `must be at most ${max} characters (got ${length})`
              : `must be ${min} to ${max} characters (got ${length})`,
      });
    }
  });
  if (options.pattern) {
    const pattern = options.pattern;
    schema = schema.refine((value) => pattern.test(value), {
      message: options.patternHint ?? `must match ${pattern.source}`,
    });
  }
  return schema.register(boundRegistry, {
    kind: "text",
    min,
    max: options.max ?? null,
    ...(options.pattern && { pattern: options.pattern.source }),
    ...(options.patternHint && { patternHint: options.patternHint }),
    ...(!plain && { controlCharacters: "allowed" as const }),
  });
}

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Whether `value` has the form of an id: 32 hex digits, whatever the hyphens, braces, `urn:uuid:`
 * prefix or case (every spelling a reader might take for a UUID).
 */
export function looksLikeUuid(value: string): boolean {
  const bare = value
    .toLowerCase()
    .replace(/^urn:uuid:/, "")
    .replace(/^\{(.*)\}$/, "$1")
    .replaceAll("-", "");
  return /^[0-9a-f]{32}$/.test(bare);
}

/**
 * Why `value` is not a web address a page may show (a picture), or null when it is: an absolute
 * `https:` URL, or `http:` when `allowHttp` (a server reached over loopback), with a host and no
 * credentials. Everything else (`javascript:`, `data:`, relative paths) is refused.
 */
export function webUrlProblem(value: string, options: { readonly allowHttp: boolean }): string | null {
  const expected = options.allowHttp ? "an http or https URL" : "an https URL";
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be ${expected}`;
  }
  const schemeOk = url.protocol === "https:" || (options.allowHttp && url.protocol === "http:");
  if (!schemeOk || url.hostname === "") return `must be ${expected}`;
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  return null;
}

/** Whether `url` points at this machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    return host === "localhost" || host.endsWith(".localhost") || /^127\./.test(host) || host === "::1";
  } catch {
    return false;
  }
}

/** A UUID in the 8-4-4-4-12 hex form, any case; normalised to lower case. */
export const uuid = z
  .string()
  .refine((value) => uuidPattern.test(value), { message: "must be a UUID (8-4-4-4-12 hex digits)" })
  .transform((value) => value.toLowerCase())
  .register(boundRegistry, { kind: "uuid" });

/**
 * A duration in whole seconds, bounded inclusively, read as a number of seconds. Every duration
 * of the contract is whole seconds (certificate validity and token expiry are counted in seconds,
 * and so are they stored): a fraction is refused rather than rounded, so what is stored is exactly
 * what was sent. The bound check is exact, so a nanosecond past a bound is out of bounds.
 */
export function durationSeconds(bounds: { min: number; max: number }) {
  const min = BigInt(bounds.min);
  const max = BigInt(bounds.max);
  return z
    .custom<Duration>((value) => typeof value === "object" && value !== null)
    .transform((value, ctx) => {
      if (value.nanos !== 0) {
        ctx.addIssue({
          code: "custom",
          message: `must be a whole number of seconds such as "3600s" (got ${durationText(value)})`,
        });
        return z.NEVER;
      }
      if (value.seconds < min || value.seconds > max) {
        ctx.addIssue({
          code: "custom",
          message: `must be between ${bounds.min}s and ${bounds.max}s (got ${durationText(value)})`,
        });
        return z.NEVER;
      }
      return Number(value.seconds);
    })
    .register(boundRegistry, { kind: "duration", min: bounds.min, max: bounds.max });
}

/** A duration as the JSON mapping writes it: `3600s`, `-1.5s`, `0.000000001s`. */
export function durationText(value: Pick<Duration, "seconds" | "nanos">): string {
  const negative = value.seconds < 0n || value.nanos < 0;
  const seconds = value.seconds < 0n ? -value.seconds : value.seconds;
  const nanos = Math.abs(value.nanos);
  const fraction = nanos === 0 ? "" : `.${String(nanos).padStart(9, "0").replace(/0+$/, "")}`;
  return `${negative ? "-" : ""}${seconds}${fraction}s`;
}

/** The range of google.protobuf.Timestamp: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z. */
const timestampRange = { min: -62_135_596_800n, max: 253_402_300_799n } as const;

/**
 * A timestamp, read as a Date. Seconds and nanos must be in the range the Timestamp type defines
 * (the binary form carries them as they were sent; the JSON form is checked before decoding).
 */
export const timestamp = z
  .custom<Timestamp>((value) => typeof value === "object" && value !== null)
  .superRefine((value, ctx) => {
    if (value.seconds < timestampRange.min || value.seconds > timestampRange.max) {
      ctx.addIssue({
        code: "custom",
        message: "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z",
      });
    } else if (!Number.isInteger(value.nanos) || value.nanos < 0 || value.nanos > 999_999_999) {
      ctx.addIssue({ code: "custom", message: `nanos must be 0 to 999999999 (got ${value.nanos})` });
    }
  })
  .transform((value) => new Date(Number(value.seconds) * 1000 + Math.floor(value.nanos / 1e6)))
  .register(boundRegistry, { kind: "timestamp" });

/**
 * An enum value. `definedOnly` rejects numbers the contract does not define (enums are open on
 * the wire); `notUnspecified` rejects the zero value.
 */
export function enumValue(desc: DescEnum, options: { definedOnly?: boolean; notUnspecified?: boolean } = {}) {
  const defined = new Set(desc.values.map((v) => v.number));
  const accepted = desc.values.filter((v) => !(options.notUnspecified && v.number === 0)).map((v) => v.name);
  const schema = z.number().superRefine((value, ctx) => {
    if (options.definedOnly && !defined.has(value)) {
      ctx.addIssue({
        code: "custom",
        message: `must be one of ${desc.values.map((v) => v.name).join(", ")}`,
      });
    } else if (options.notUnspecified && value === 0) {
      ctx.addIssue({ code: "custom", message: `must be set (not ${desc.values[0]?.name ?? "0"})` });
    }
  });
  // Open enums (any number accepted) promise nothing worth listing.
  return options.definedOnly || options.notUnspecified
    ? schema.register(boundRegistry, { kind: "enum", values: accepted, closed: options.definedOnly === true })
    : schema;
}

/**
 * The WHATWG "valid email address" (what protovalidate's `email` rule checks), at most 256
 * characters as the spec's limits table says for every email.
 */
const emailPattern =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;
export const email = text({ max: 256 })
  .refine((value) => emailPattern.test(value), { message: "must be an email address" })
  .register(boundRegistry, { kind: "email", max: 256 });

/**
 * A path on this site to return to (`/invites/…`): one leading slash, since "//host" and "/\host"
 * are other sites to a browser, and no control characters (a header split in a redirect).
 */
const sitePathHint = "must be a path on this site: one leading / (not // or /\\) and no control characters";
export const sitePath = text({ min: 1, max: 2048 })
  .refine(
    (value) =>
      /^\/(?![/\\])/.test(value) &&
      [...value].every((c) => {
        const code = c.charCodeAt(0);
        return code >= 0x20 && code !== 0x7f;
      }),
    { message: sitePathHint },
  )
  .register(boundRegistry, { kind: "text", min: 1, max: 2048, patternHint: sitePathHint });

/** A paging limit (1 to 100) and offset (at least 0), each checked only when sent. */
export const paging = {
  limit: z
    .number()
    .int()
    .min(1, "must be between 1 and 100")
    .max(100, "must be between 1 and 100")
    .optional(),
  offset: z.number().int().min(0, "must be at least 0").optional(),
};

/** The defaults of a list call that did not say how much it wants. */
export const defaultPage = { limit: 50, offset: 0 } as const;

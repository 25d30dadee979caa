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

/** A string of `min` to `max` code points (no upper bound without `max`), optionally matching `pattern`. */
export function text(options: { min?: number; max?: number; pattern?: RegExp; patternHint?: string }) {
  const min = options.min ?? 0;
  const max = options.max ?? Number.POSITIVE_INFINITY;
  let schema = z.string().superRefine((value, ctx) => {
    // NUL cannot be stored in PostgreSQL text, and no name or description needs it.
    if (value.includes("\u0000")) {
      ctx.addIssue({ code: "custom", message: "must not contain NUL characters" });
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
  });
}

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A UUID in the 8-4-4-4-12 hex form, any case; normalised to lower case. */
export const uuid = z
  .string()
  .refine((value) => uuidPattern.test(value), { message: "must be a UUID (8-4-4-4-12 hex digits)" })
  .transform((value) => value.toLowerCase())
  .register(boundRegistry, { kind: "uuid" });

/**
 * A duration bounded inclusively, read as a number of seconds. The bound check is exact (in
 * nanoseconds): a nanosecond past a bound is out of bounds, which a float sum would round away.
 */
export function durationSeconds(bounds: { min: number; max: number }) {
  const minNanos = BigInt(bounds.min) * 1_000_000_000n;
  const maxNanos = BigInt(bounds.max) * 1_000_000_000n;
  return z
    .custom<Duration>((value) => typeof value === "object" && value !== null)
    .transform((value, ctx) => {
      const nanos = value.seconds * 1_000_000_000n + BigInt(value.nanos);
      const seconds = Number(value.seconds) + value.nanos / 1e9;
      if (nanos < minNanos || nanos > maxNanos) {
        ctx.addIssue({
          code: "custom",
          message: `must be between ${bounds.min}s and ${bounds.max}s (got ${seconds}s)`,
        });
        return z.NEVER;
      }
      return seconds;
    })
    .register(boundRegistry, { kind: "duration", min: bounds.min, max: bounds.max });
}

/** A timestamp, read as a Date. */
export const timestamp = z
  .custom<Timestamp>((value) => typeof value === "object" && value !== null)
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

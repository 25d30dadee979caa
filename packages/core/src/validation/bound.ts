/**
 * What a validation rule promises, as data: each rule built in `rules.ts` registers its bound
 * here, so the table of every bound of every request (`table.ts`), the generated
 * docs/validation.md and the fast-check arbitraries of `@wap/core/testing` all read the rules the
 * operations enforce, never a copy of them.
 *
 * @module
 */
import * as z from "zod";

/** A bound on one request field, in the terms a client writes the field in protobuf JSON. */
export type Bound =
  /**
   * A string of `min` to `max` Unicode code points (no NUL), optionally matching `pattern`, with
   * no control characters unless `controlCharacters` is "allowed" (encoded data, passwords).
   */
  | {
      readonly kind: "text";
      readonly min: number;
      readonly max: number | null;
      readonly pattern?: string;
      readonly patternHint?: string;
      readonly controlCharacters?: "allowed";
    }
  /** An email address (WHATWG form) of at most `max` code points. */
  | { readonly kind: "email"; readonly max: number }
  /** A UUID in the 8-4-4-4-12 hex form. */
  | { readonly kind: "uuid" }
  /** A google.protobuf.Duration between `min` and `max` seconds inclusive (fractions allowed). */
  | { readonly kind: "duration"; readonly min: number; readonly max: number }
  /** A google.protobuf.Timestamp (RFC 3339). */
  | { readonly kind: "timestamp" }
  /**
   * An enum value by name; `values` are the accepted names. A closed enum refuses numbers the
   * contract does not define; an open one refuses only the zero value.
   */
  | { readonly kind: "enum"; readonly values: readonly string[]; readonly closed: boolean }
  /** A field with no bound beyond its protobuf type; listed only when it must be sent. */
  | { readonly kind: "present" }
  /** A whole number between `min` and `max` inclusive (`null`: unbounded on that side). */
  | { readonly kind: "integer"; readonly min: number | null; readonly max: number | null }
  /** A repeated field of `min` to `max` items, each bounded by `item` when it has a bound. */
  | {
      readonly kind: "count";
      readonly min: number;
      readonly max: number | null;
      readonly item?: Bound & { readonly refined?: true };
    };

/** Where the rules of `rules.ts` record their bounds. Clones of a schema (`.refine`) keep them. */
export const boundRegistry = z.registry<Bound>();

type Def = {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  checks?: Array<{ _zod: { def: Record<string, unknown> } }>;
};

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/**
 * A bound and whether the schema adds rules of its own on top of it (a `.refine` on a named
 * bound, such as a URL check on a length rule): such a field's bound is necessary, not sufficient.
 */
export type FoundBound = Bound & { readonly refined?: true };

/** The bound a schema enforces, looking through optional, default and transform wrappers. */
export function boundOf(schema: z.ZodType): FoundBound | undefined {
  const registered = boundRegistry.get(schema);
  if (registered) return boundRegistry.has(schema) ? registered : { ...registered, refined: true };
  const def = defOf(schema);
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
      return def.innerType ? boundOf(def.innerType) : undefined;
    case "pipe": {
      const inner = def.in ? boundOf(def.in) : undefined;
      // `.transform()` pipes into a transform; `.pipe(schema)` into further rules.
      const further = def.out !== undefined && defOf(def.out).type !== "transform";
      return inner && further ? { ...inner, refined: true } : inner;
    }
    case "number":
      return numberBound(def);
    case "array": {
      const item = def.element ? boundOf(def.element) : undefined;
      let min = 0;
      let max: number | null = null;
      // A rule of the list's own (`.superRefine`, e.g. no repeats across items) is a further check.
      let custom = false;
      for (const check of def.checks ?? []) {
        const c = check._zod.def;
        if (c.check === "max_length") max = c.maximum as number;
        if (c.check === "min_length") min = c.minimum as number;
        if (c.check === "length_equals") min = max = c.length as number;
        if (c.check === "custom") custom = true;
      }
      // A list whose items have further checks has them too.
      return max === null && min === 0 && !item
        ? undefined
        : {
            kind: "count",
            min,
            max,
            ...(item && { item }),
            ...((item?.refined || custom) && { refined: true as const }),
          };
    }
    default:
      return undefined;
  }
}

function numberBound(def: Def): Bound | undefined {
  let min: number | null = null;
  let max: number | null = null;
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    const value = c.value as number;
    if (c.check === "greater_than") min = c.inclusive ? value : Math.floor(value) + 1;
    if (c.check === "less_than") max = c.inclusive ? value : Math.ceil(value) - 1;
  }
  return min === null && max === null ? undefined : { kind: "integer", min, max };
}

/** Whether a field must be sent: its schema is not optional and has no default. */
export function isRequired(schema: z.ZodType): boolean {
  return !schema.safeParse(undefined).success;
}

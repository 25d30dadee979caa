/**
 * Bounds in words, for docs/validation.md and for anyone showing a form's rules to a person.
 *
 * @module
 */

import type { FoundBound } from "./bound.js";

function range(min: number | null, max: number | null, unit: string): string {
  const of = (n: number) => `${n} ${n === 1 ? unit.replace(/s$/, "") : unit}`;
  if (min !== null && max !== null) return min === max ? `exactly ${of(min)}` : `${min} to ${of(max)}`;
  if (max !== null) return `at most ${of(max)}`;
  if (min !== null) return `at least ${of(min)}`;
  return `any number of ${unit}`;
}

/** One bound as a short phrase, e.g. "1 to 256 characters" or "a duration from 60s to 31536000s". */
export function describeBound(bound: FoundBound): string {
  const further = bound.refined ? ", with further checks" : "";
  switch (bound.kind) {
    case "text": {
      const length =
        bound.min === 0 && bound.max === null
          ? "any text"
          : range(bound.min || null, bound.max, "characters");
      const controls =
        bound.controlCharacters === "allowed"
          ? "; line breaks and other control characters allowed (not NUL)"
          : "";
      return `${length}${bound.patternHint ? `; ${bound.patternHint}` : ""}${controls}${further}`;
    }
    case "email":
      return `an email address of at most ${bound.max} characters${further}`;
    case "uuid":
      return `a UUID${further}`;
    case "duration":
      return `a duration from ${bound.min}s to ${bound.max}s (whole seconds)${further}`;
    case "timestamp":
      return `an RFC 3339 timestamp${further}`;
    case "enum":
      return `one of ${bound.values.join(", ")}${further}`;
    case "integer":
      return `a whole number, ${range(bound.min, bound.max, "").trim()}${further}`;
    case "count":
      // Checks on the items are said once, with the items.
      return `${range(bound.min || null, bound.max, "items")}${bound.item ? `, each ${describeBound(bound.item)}` : ""}${bound.item?.refined ? "" : further}`;
    case "present":
      return "must be sent (its form is checked by the operation)";
  }
}

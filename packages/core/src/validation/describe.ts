/**
 * Bounds in words, for docs/validation.md and for anyone showing a form's rules to a person.
 *
 * @module
 */

import type { RequestBounds } from "../platform/validation-table.js";
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

/** docs/validation.md: every bound of every request, by service and RPC. */
export function renderValidationDoc(requests: readonly RequestBounds[]): string {
  const lines = [
    "# Validation rules",
    "",
    "Every bound the server enforces on a request field, by RPC. This page is generated from the",
    "rules the operations enforce (`pnpm generate`; a test fails when it is stale); the same table is",
    "exported as `validationBounds` from `@wap/core`, and `@wap/core/testing` derives fast-check",
    "arbitraries from it (`requestArbitraries`) for property tests of code that calls the platform.",
    "",
    "Lengths count Unicode code points. Text refuses control characters (C0 and C1 controls such as",
    "NUL, tab, CR, LF and ESC, DEL, U+2028 and U+2029, and the bidirectional embeddings, overrides and",
    "isolates U+202A to U+202E and U+2066 to U+2069) unless its rule says they are allowed: names,",
    "descriptions and endpoints end up in files such as ssh_config and in terminals, where these",
    "characters would start a new line, an escape sequence or a reordering of the text.",
    "",
    "A field that is not required may be left out; a request that breaks a rule is refused with",
    "`invalid_argument` and a `BadRequest` field violation naming the field.",
    "RPCs with no rule beyond their field types are not listed.",
    "",
  ];
  let service = "";
  for (const request of requests) {
    if (request.fields.length === 0) continue;
    const [, serviceName, method] = /^\/platform\.v1\.([^/]+)\/(.+)$/.exec(request.procedure) ?? [];
    if (serviceName !== service) {
      service = serviceName ?? "";
      lines.push(`## ${service}`, "");
    }
    lines.push(`### ${method}`, "");
    if (request.crossFieldRules) lines.push("Fields are also checked against each other.", "");
    lines.push("| field | required | rule |", "| --- | --- | --- |");
    for (const field of request.fields) {
      const rule = describeBound(field.bound).replaceAll("|", "\\|");
      lines.push(`| \`${field.field}\` | ${field.required ? "yes" : "no"} | ${rule} |`);
    }
    lines.push("");
  }
  return `${lines.join("\n").trimEnd()}\n`;
}

/**
 * Every validation bound of every request, as one table: for each RPC, each field that carries a
 * bound, whether it must be sent, and the bound itself. It is read from the operations' own input
 * schemas (see `bound.ts`), so it cannot drift from what the server enforces. docs/validation.md
 * is generated from it, and `@wap/core/testing` derives fast-check arbitraries from it.
 *
 * @module
 */
import type * as z from "zod";
import { boundOf, type FoundBound, isRequired } from "../validation/bound.js";
import { describeBound } from "../validation/describe.js";
import { allOperations, streamingOperations } from "./registry.js";

/** One bounded field of one request. */
export interface FieldBound {
  /** The field's JSON name; nested fields are dotted (`settings.lifetime`). */
  readonly field: string;
  /** Whether a request without it is refused. */
  readonly required: boolean;
  /** `refined`: the field has further rules (a format, a cross-field check) beyond this bound. */
  readonly bound: FoundBound;
}

/** The bounded fields of one RPC's request. */
export interface RequestBounds {
  /** `/platform.v1.Service/Method`. */
  readonly procedure: string;
  /** The request message's full name, e.g. `platform.v1.CreateWorkspaceRequest`. */
  readonly message: string;
  readonly fields: readonly FieldBound[];
  /** Whether the request has rules across fields (e.g. a start before an end) beyond these bounds. */
  readonly crossFieldRules: boolean;
}

type ObjectDef = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  checks?: unknown[];
};

function hasObjectChecks(schema: z.ZodType): boolean {
  const def = (schema as unknown as { _zod: { def: ObjectDef } })._zod.def;
  // A check on the request or on an object inside it (a policy whose fields depend on each other).
  if (def.type === "object")
    return (def.checks?.length ?? 0) > 0 || Object.values(def.shape ?? {}).some(hasObjectChecks);
  if (def.innerType) return hasObjectChecks(def.innerType);
  if (def.type === "pipe" && def.in) return hasObjectChecks(def.in);
  return false;
}

function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const def = (schema as unknown as { _zod: { def: ObjectDef } })._zod.def;
  if (def.type === "object") return def.shape;
  if (def.innerType) return objectShape(def.innerType);
  if (def.type === "pipe" && def.in) return objectShape(def.in);
  return undefined;
}

function fieldsOf(schema: z.ZodType, prefix: string): FieldBound[] {
  const shape = objectShape(schema);
  if (!shape) return [];
  return Object.entries(shape).flatMap(([name, field]) => {
    const path = `${prefix}${name}`;
    const bound = boundOf(field);
    const required = isRequired(field);
    if (bound) return [{ field: path, required, bound }];
    const nested = fieldsOf(field, `${path}.`);
    if (nested.length > 0 || objectShape(field)) return nested;
    return required ? [{ field: path, required, bound: { kind: "present" } as const }] : [];
  });
}

function requestBounds(): RequestBounds[] {
  return [...allOperations, ...streamingOperations]
    .map((operation) => ({
      procedure: `/${operation.method.parent.typeName}/${operation.method.name}`,
      message: operation.method.input.typeName,
      fields: fieldsOf(operation.input as z.ZodType, ""),
      crossFieldRules: hasObjectChecks(operation.input as z.ZodType),
    }))
    .sort((a, b) => a.procedure.localeCompare(b.procedure));
}

/** Every bound of every request this build validates, by procedure (sorted). */
export const validationBounds: readonly RequestBounds[] = requestBounds();

/** docs/validation.md: every bound of every request, by service and RPC. */
export function renderValidationDoc(requests: readonly RequestBounds[]): string {
  const lines = [
    "# Validation rules",
    "",
    "Every bound the server enforces on a request field, by RPC. This page is generated from the",
    "rules the operations enforce (`pnpm docs:generate`; a test fails when it is stale); the same table is",
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

import type * as z from "zod";
import { type FieldViolation, InvalidArgumentError } from "../errors.js";

/**
 * Validates `input` against `schema` and returns the typed result, or throws one
 * InvalidArgumentError that names every offending field.
 */
export function parseRequest<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const violations: FieldViolation[] = result.error.issues.map((issue) => ({
    field: issue.path.map(String).join("."),
    description: describeIssue(issue),
  }));
  const summary = violations
    .map((v) => (v.field ? `${v.field}: ${v.description}` : v.description))
    .join("; ");
  throw new InvalidArgumentError(`invalid request: ${summary}`, { violations });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type") {
    return issue.message.endsWith("received undefined") ? "is required" : `must be ${issue.expected}`;
  }
  if (issue.code === "unrecognized_keys") return `unknown field(s): ${issue.keys.join(", ")}`;
  return issue.message;
}

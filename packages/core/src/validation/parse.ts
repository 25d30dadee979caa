import type * as z from "zod";
import type { ReasonFor } from "../error-reasons/registry.js";
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

/** An error of a parser that refuses its input for a reason a developer can act on. */
type ParserRefusal = abstract new (...args: never[]) => Error & { readonly reason: string };

/**
 * Runs the parser of one request field; its refusal (an error of class `refusal`) becomes an
 * InvalidArgumentError naming the field, with the parser's reason. Other errors pass through.
 */
export function parseField<T>(
  field: string,
  reason: ReasonFor<"invalid_argument">,
  refusal: ParserRefusal,
  parse: () => T,
): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof refusal)) throw error;
    throw new InvalidArgumentError(`invalid request: ${field}: ${error.reason}`, {
      reason,
      violations: [{ field, description: error.reason }],
      cause: error,
    });
  }
}

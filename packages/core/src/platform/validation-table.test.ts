import { fromJson } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type * as z from "zod";
import { InvalidArgumentError } from "../errors.js";
import { presentFields } from "../lib/presence.js";
import { requestArbitraries } from "../testing/arbitraries.js";
import { parseRequest } from "../validation/parse.js";
import { allOperations, streamingOperations } from "./registry.js";
import { validationBounds } from "./validation-table.js";

const operations = new Map(
  [...allOperations, ...streamingOperations].map((operation) => [
    `/${operation.method.parent.typeName}/${operation.method.name}`,
    operation,
  ]),
);

/** What the platform's validation step makes of a request sent as JSON. */
function validate(procedure: string, json: object) {
  const operation = operations.get(procedure)!;
  const message = fromJson(operation.method.input, json as never);
  return parseRequest(operation.input as z.ZodType, presentFields(operation.method.input, message));
}

function violatedFields(procedure: string, json: object): string[] {
  try {
    validate(procedure, json);
    return [];
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    return error.violations.map((violation) => violation.field);
  }
}

describe("the table of validation bounds", () => {
  it("covers every operation, and every bounded field names a field of its request message", () => {
    expect(validationBounds.map((request) => request.procedure).sort()).toEqual(
      [...operations.keys()].sort(),
    );
    for (const request of validationBounds) {
      const input = operations.get(request.procedure)!.method.input;
      for (const { field } of request.fields) {
        const top = field.split(".")[0];
        expect(
          input.fields.map((f: { localName: string }) => f.localName),
          `${request.procedure} ${field}`,
        ).toContain(top);
      }
    }
  });

  for (const request of validationBounds) {
    const { valid, justOutside } = requestArbitraries(request);
    // Fields whose bound the table states in full: a request within them is never refused for them.
    const stated = new Set(
      request.fields
        .filter((field) => field.bound.kind !== "present" && !field.bound.refined)
        .map((field) => field.field),
    );
    it(`${request.procedure}: requests within every bound are not refused for those fields`, () => {
      fc.assert(
        fc.property(valid, (json) => {
          const refused = violatedFields(request.procedure, json).filter((field) => stated.has(field));
          expect(request.crossFieldRules ? [] : refused).toEqual([]);
        }),
        { numRuns: 15 },
      );
    });
    if (justOutside) {
      it(`${request.procedure}: a field just outside its bound is refused, naming it`, () => {
        fc.assert(
          fc.property(justOutside, ({ request: json, field }) => {
            expect(violatedFields(request.procedure, json)).toContain(field);
          }),
          { numRuns: 15 },
        );
      });
    }
  }
});

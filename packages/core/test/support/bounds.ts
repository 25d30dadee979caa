/**
 * Helpers of the bad-input suites: strings of a given length in code points, the fields a call's
 * validation error names, and the check of a length rule on both sides of its bounds.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import fc from "fast-check";
import { expect } from "vitest";
import type { Caller } from "../../src/context.js";
import { PlatformError } from "../../src/errors.js";

/** Strings of exactly `length` code points, mixing ASCII, BMP and astral characters by default. */
export const ofLength = (
  length: number,
  chars: fc.Arbitrary<string> = fc.constantFrom("a", "Z", "7", "é", "中", "😀"),
) => fc.array(chars, { minLength: length, maxLength: length }).map((parts) => parts.join(""));

type Call = <I extends DescMessage, O extends DescMessage>(
  caller: Caller,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
) => Promise<MessageShape<O>>;

/**
 * Returns `violatedFields(caller, method, request)`: the fields a validation error names, or []
 * for any other outcome (success, or a refusal that is not a rule of the contract, such as a
 * well-formed but wrong token). `platform` is read at call time, so it may be set in beforeAll.
 */
export function violatedFieldsOf(platform: () => { call: Call }) {
  return async <I extends DescMessage, O extends DescMessage>(
    caller: Caller,
    method: DescMethodUnary<I, O>,
    request: MessageInitShape<I>,
  ): Promise<string[]> => {
    try {
      await platform().call(caller, method, request);
      return [];
    } catch (error) {
      if (!(error instanceof PlatformError)) throw error;
      const validation = error.code === "invalid_argument" && error.reason === "INVALID_ARGUMENT";
      return validation ? error.violations.map((v) => v.field) : [];
    }
  };
}

type ViolatedFields = ReturnType<typeof violatedFieldsOf>;

/** One length bound of a request field, counted in code points. */
export interface LengthRule {
  readonly name: string;
  readonly caller: () => Caller;
  // biome-ignore lint/suspicious/noExplicitAny: one table for methods of every shape.
  readonly method: DescMethodUnary<any, any>;
  readonly field: string;
  readonly min: number;
  /** Undefined: no upper bound (checked far above the minimum instead). */
  readonly max?: number;
  readonly request: (value: string) => Record<string, unknown>;
  readonly chars?: fc.Arbitrary<string>;
}

/**
 * Checks both sides of a length rule: lengths within the bounds (sampled up to 2000 above the
 * minimum, so large maxima stay quick) and the exact bounds pass; shorter lengths, and lengths up
 * to 300 above the maximum, are refused naming the field.
 */
export async function expectLengthRule(
  violatedFields: ViolatedFields,
  rule: LengthRule,
  numRuns = 25,
): Promise<void> {
  const fieldsFor = (value: string) => violatedFields(rule.caller(), rule.method, rule.request(value));
  const strings = (lengths: fc.Arbitrary<number>) => lengths.chain((n) => ofLength(n, rule.chars));
  const within = fc.integer({ min: rule.min, max: Math.min(rule.max ?? Infinity, rule.min + 2000) });
  await fc.assert(
    fc.asyncProperty(strings(within), async (value) => {
      expect(await fieldsFor(value)).not.toContain(rule.field);
    }),
    { numRuns },
  );
  for (const length of [rule.min, rule.max ?? rule.min + 10_000]) {
    const [atBound] = fc.sample(ofLength(length, rule.chars), 1);
    expect(await fieldsFor(atBound!)).not.toContain(rule.field);
  }
  const outside: fc.Arbitrary<number>[] = [];
  if (rule.min > 0) outside.push(fc.integer({ min: 0, max: rule.min - 1 }));
  if (rule.max !== undefined) outside.push(fc.integer({ min: rule.max + 1, max: rule.max + 300 }));
  if (outside.length === 0) return;
  await fc.assert(
    fc.asyncProperty(strings(fc.oneof(...outside)), async (value) => {
      expect(await fieldsFor(value)).toContain(rule.field);
    }),
    { numRuns },
  );
  if (rule.max !== undefined) {
    const [justOver] = fc.sample(ofLength(rule.max + 1, rule.chars), 1);
    expect(await fieldsFor(justOver!)).toContain(rule.field);
  }
}

/**
 * Helpers of the bad-input suites: strings of a given length in code points, and the fields a
 * call's validation error names.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import fc from "fast-check";
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

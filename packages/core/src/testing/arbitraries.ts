/**
 * fast-check arbitraries derived from the platform's validation bounds (`validationBounds`), for
 * property tests of code that calls the platform: requests every bound accepts, and requests with
 * exactly one field just outside its bound. Values are in protobuf JSON form, as a client sends
 * them over Connect JSON or REST (`fromJson` turns them into messages).
 *
 * @example
 * ```ts
 * const bounds = validationBounds.find((r) => r.procedure.endsWith("/CreateWorkspace"))!;
 * const { valid, justOutside } = requestArbitraries(bounds);
 * fc.assert(fc.asyncProperty(justOutside, async ({ request, field }) => {
 *   // send `request`; expect invalid_argument naming `field`
 * }));
 * ```
 *
 * @module
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { platformServices } from "@wap/api";
import fc from "fast-check";
import type { FieldBound, RequestBounds } from "../platform/validation-table.js";
import type { Bound } from "../validation/bound.js";
import { hasControlCharacters } from "../validation/rules.js";

/** A request in protobuf JSON form. */
export type JsonRequest = { [field: string]: unknown };

/** A request with one field outside its bound, and that field's name (dotted when nested). */
export interface OutsideRequest {
  readonly request: JsonRequest;
  readonly field: string;
}

/** Characters of every width a length rule must count as one: ASCII, Latin-1, CJK, astral. */
const mixedChars = fc.constantFrom("a", "Z", "7", "é", "中", "😀");

const ofLength = (length: number, chars: fc.Arbitrary<string> = mixedChars) =>
  fc.array(chars, { minLength: length, maxLength: length }).map((parts) => parts.join(""));

/** Lengths from `min` to `max`, the two ends themselves more often than chance would pick them. */
const lengthIn = (min: number, max: number) =>
  fc.oneof(fc.constant(min), fc.constant(max), fc.integer({ min, max: Math.min(max, min + 40) }));

function validText(bound: Extract<Bound, { kind: "text" }>): fc.Arbitrary<string> {
  const max = bound.max ?? bound.min + 64;
  if (bound.pattern === undefined) return lengthIn(bound.min, max).chain((length) => ofLength(length));
  const pattern = new RegExp(bound.pattern);
  return fc.stringMatching(pattern).filter((value) => {
    const length = [...value].length;
    const plain = bound.controlCharacters === "allowed" || !hasControlCharacters(value);
    return plain && length >= bound.min && length <= max;
  });
}

/** A duration in protobuf JSON with 0 to 9 fractional digits, within `min` and `max` seconds. */
function validDuration(min: number, max: number): fc.Arbitrary<string> {
  // Whole seconds, written with or without a zero fraction ("60s", "60.000s").
  return fc
    .tuple(fc.integer({ min, max }), fc.integer({ min: 0, max: 9 }))
    .map(([seconds, zeros]) => (zeros === 0 ? `${seconds}s` : `${seconds}.${"0".repeat(zeros)}s`));
}

/** Values a bound accepts, in protobuf JSON form; undefined where nothing is known to generate. */
export function validValues(bound: Bound, field?: DescField): fc.Arbitrary<unknown> | undefined {
  switch (bound.kind) {
    case "text":
      return validText(bound);
    case "email":
      return fc
        .tuple(fc.stringMatching(/^[a-z0-9]{1,20}$/), fc.stringMatching(/^[a-z]{1,12}$/))
        .map(([local, domain]) => `${local}@${domain}.example`);
    case "uuid":
      return fc.uuid();
    case "duration":
      return validDuration(bound.min, bound.max);
    case "timestamp":
      return fc
        .date({
          min: new Date("1971-01-01T00:00:00Z"),
          max: new Date("2999-12-31T23:59:59Z"),
          noInvalidDate: true,
        })
        .map((date) => date.toISOString());
    case "enum":
      return bound.values.length > 0 ? fc.constantFrom(...bound.values) : undefined;
    case "integer":
      return fc.integer({ min: bound.min ?? -1_000_000, max: bound.max ?? 1_000_000 });
    case "count": {
      const item = bound.item ? validValues(bound.item) : undefined;
      if (!item) return bound.min === 0 ? fc.constant([]) : undefined;
      return fc.array(item, {
        minLength: bound.min,
        maxLength: Math.min(bound.max ?? bound.min + 5, bound.min + 5),
      });
    }
    case "present":
      return field ? anyOfType(field) : undefined;
  }
}

/** Values just outside a bound (one step past an end, or of the wrong form); undefined if it has none. */
export function outsideValues(bound: Bound): fc.Arbitrary<unknown> | undefined {
  switch (bound.kind) {
    case "text": {
      const ends = [
        ...(bound.max !== null ? [ofLength(bound.max + 1, fc.constant("a"))] : []),
        ...(bound.min > 0 ? [ofLength(bound.min - 1, fc.constant("a"))] : []),
        ...(bound.pattern !== undefined ? [fc.constant(" ")] : []),
        fc.constant("a\u0000b"),
        ...(bound.controlCharacters === "allowed"
          ? []
          : [fc.constantFrom("a\nb", "a\u001b[2Jb", "a\u202eb")]),
      ];
      return fc.oneof(...ends);
    }
    case "email":
      return fc.oneof(fc.constant("not-an-email"), fc.constant(`${"a".repeat(bound.max)}@example.com`));
    case "uuid":
      return fc.uuid().map((id) => id.slice(0, -1));
    case "duration":
      return fc.oneof(
        fc.constant(`${bound.max + 1}s`),
        fc.constant(`${bound.max}.000000001s`),
        fc.constant(`${bound.min}.5s`),
        ...(bound.min > 0 ? [fc.constant(`${bound.min - 1}s`)] : []),
      );
    case "enum":
      // Numbers are valid enum JSON: one the contract does not define, or the zero value.
      return fc.constant(bound.closed ? 999 : 0);
    case "integer":
      return fc.oneof(
        ...(bound.min !== null ? [fc.constant(bound.min - 1)] : []),
        ...(bound.max !== null ? [fc.constant(bound.max + 1)] : []),
      );
    case "count": {
      if (bound.max === null) return undefined;
      const item = bound.item ? validValues(bound.item) : undefined;
      return item ? fc.array(item, { minLength: bound.max + 1, maxLength: bound.max + 1 }) : undefined;
    }
    case "timestamp":
    case "present":
      return undefined;
  }
}

/** Some value of a field's protobuf type, for fields that must be sent but carry no other bound. */
function anyOfType(field: DescField): fc.Arbitrary<unknown> | undefined {
  if (field.fieldKind === "list") return fc.constant([]);
  if (field.fieldKind === "map") return fc.constant({});
  if (field.fieldKind === "enum") {
    const values = field.enum.values.filter((value) => value.number !== 0).map((value) => value.name);
    return values.length > 0 ? fc.constantFrom(...values) : undefined;
  }
  if (field.fieldKind === "message") return fc.constant({});
  switch (field.scalar) {
    case 9: // string
      return fc.stringMatching(/^[a-z0-9]{1,16}$/);
    case 8: // bool
      return fc.boolean();
    case 12: // bytes
      return fc.constant("");
    default:
      return fc.integer({ min: 1, max: 1000 });
  }
}

const messages = new Map<string, DescMessage>(
  platformServices.flatMap((service) =>
    service.methods.map((method) => [method.input.typeName, method.input]),
  ),
);

function descFieldAt(message: DescMessage | undefined, path: string): DescField | undefined {
  let desc = message;
  let found: DescField | undefined;
  for (const name of path.split(".")) {
    found = desc?.fields.find((field) => field.localName === name || field.jsonName === name);
    desc = found?.fieldKind === "message" ? found.message : undefined;
  }
  return found;
}

function setPath(target: JsonRequest, path: string, value: unknown): JsonRequest {
  const [head, ...rest] = path.split(".") as [string, ...string[]];
  if (rest.length === 0) return { ...target, [head]: value };
  const inner = (target[head] as JsonRequest | undefined) ?? {};
  return { ...target, [head]: setPath(inner, rest.join("."), value) };
}

function fieldArbitrary(request: RequestBounds, field: FieldBound) {
  return validValues(field.bound, descFieldAt(messages.get(request.message), field.field));
}

/**
 * Arbitraries of one RPC's requests: `valid` passes every bound (ids are well-formed but name
 * nothing in particular, so a call may still answer not_found); `justOutside` breaks exactly one
 * bounded field and says which (absent when the request has no bound that can be broken).
 */
export function requestArbitraries(request: RequestBounds): {
  readonly valid: fc.Arbitrary<JsonRequest>;
  readonly justOutside: fc.Arbitrary<OutsideRequest> | undefined;
} {
  const parts = request.fields.flatMap((field) => {
    const value = fieldArbitrary(request, field);
    if (!value) return [];
    // Optional fields are left out as often as they are sent.
    const sent = field.required
      ? value.map((v) => ({ set: true, v }))
      : fc.option(
          value.map((v) => ({ set: true, v })),
          { nil: undefined },
        );
    return [{ field, sent }];
  });
  const valid = fc
    .tuple(...parts.map((part) => part.sent))
    .map((values) =>
      values.reduce<JsonRequest>(
        (acc, value, index) => (value ? setPath(acc, parts[index]!.field.field, value.v) : acc),
        {},
      ),
    );
  const breakable = request.fields.flatMap((field) => {
    const outside = outsideValues(field.bound);
    return outside ? [{ field: field.field, outside }] : [];
  });
  const justOutside =
    breakable.length === 0
      ? undefined
      : fc.tuple(valid, fc.constantFrom(...breakable)).chain(([base, target]) =>
          target.outside.map((value) => ({
            request: setPath(base, target.field, value),
            field: target.field,
          })),
        );
  return { valid, justOutside };
}

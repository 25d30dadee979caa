/**
 * The compiled JSON writers against protobuf-es's `toJson`, for every message type the API
 * answers or accepts (and every type nested in them): random messages, including the awkward
 * values (NaN, -0, unknown enum numbers, empty and non-ASCII strings, 64-bit extremes, bytes,
 * unset and zero optional fields, oneof cases, timestamps outside the representable range),
 * written byte for byte alike, or refused by both.
 */
import {
  create,
  type DescField,
  type DescMessage,
  type JsonValue,
  ScalarType,
  toJsonString,
} from "@bufbuild/protobuf";
import { platformServices } from "@wap/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createJsonWriters } from "./json-writer.js";

/** Every message type reachable from the services' requests and responses. */
function messageTypes(): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (desc: DescMessage) => {
    if (seen.has(desc.typeName)) return;
    seen.set(desc.typeName, desc);
    for (const field of desc.fields) {
      if (field.message !== undefined) visit(field.message);
    }
  };
  for (const service of platformServices) {
    for (const method of service.methods) {
      visit(method.input);
      visit(method.output);
    }
  }
  return [...seen.values()];
}

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });

function scalar(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.DOUBLE:
      return fc.oneof(fc.double(), fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY));
    case ScalarType.FLOAT:
      return fc.oneof(fc.float(), fc.constantFrom(0, -0));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.oneof(int64, fc.constant(0n));
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.oneof(uint64, fc.constant(0n));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return fc.oneof(fc.integer(), fc.constant(0));
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.oneof(fc.nat({ max: 2 ** 32 - 1 }), fc.constant(0));
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.STRING:
      return fc.oneof(fc.string({ unit: "grapheme", maxLength: 12 }), fc.constant(""));
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 12 });
  }
}

function enumValue(desc: { readonly values: readonly { readonly number: number }[] }) {
  return fc.oneof(fc.constantFrom(...desc.values.map((v) => v.number)), fc.constant(4242));
}

function timestamp() {
  return fc.record({
    seconds: fc.oneof(
      fc.bigInt({ min: -62_135_596_800n, max: 253_402_300_799n }),
      fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }),
    ),
    nanos: fc.oneof(fc.integer({ min: 0, max: 999_999_999 }), fc.constantFrom(0, 1_000_000, 1_000, 1, -1)),
  });
}

/** Init values of a message of `desc`, nested `depth` levels at most. */
function messageInit(desc: DescMessage, depth: number): fc.Arbitrary<Record<string, unknown>> {
  if (desc.typeName === "google.protobuf.Timestamp") return timestamp();
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) {
    if (field.oneof !== undefined) continue;
    const value = fieldValue(field, depth);
    if (value !== undefined) parts[field.localName] = value;
  }
  for (const oneof of desc.oneofs) {
    const cases = oneof.fields
      .map((field) => {
        const value = singleValue(field, depth);
        return value?.map((v) => ({ case: field.localName, value: v }));
      })
      .filter((c) => c !== undefined);
    parts[oneof.localName] = fc.oneof(fc.constant({ case: undefined }), ...cases);
  }
  return fc.record(parts, { requiredKeys: [] });
}

function singleValue(field: DescField, depth: number): fc.Arbitrary<unknown> | undefined {
  if (field.fieldKind === "scalar") return scalar(field.scalar);
  if (field.fieldKind === "enum") return enumValue(field.enum);
  if (field.fieldKind === "message") {
    return depth > 0
      ? messageInit(field.message, depth - 1).map((init) => create(field.message, init))
      : undefined;
  }
  return undefined;
}

function fieldValue(field: DescField, depth: number): fc.Arbitrary<unknown> | undefined {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
    case "message":
      return singleValue(field, depth);
    case "list": {
      const item =
        field.listKind === "scalar"
          ? scalar(field.scalar)
          : field.listKind === "enum"
            ? enumValue(field.enum)
            : depth > 0
              ? messageInit(field.message, depth - 1).map((init) => create(field.message, init))
              : undefined;
      return item && fc.array(item, { maxLength: 3 });
    }
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? scalar(field.scalar)
          : field.mapKind === "enum"
            ? enumValue(field.enum)
            : depth > 0
              ? messageInit(field.message, depth - 1).map((init) => create(field.message, init))
              : undefined;
      const key = scalar(field.mapKey).map(String);
      return value && fc.dictionary(key, value, { maxKeys: 3 });
    }
  }
}

/** The JSON text, or the fact of a refusal. */
function written(write: () => JsonValue | string): string {
  try {
    const value = write();
    return typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    return "<refused>";
  }
}

describe("compiled JSON writers", () => {
  const writers = createJsonWriters();
  const types = messageTypes();

  it("cover the API's message types", () => {
    expect(types.length).toBeGreaterThan(150);
  });

  it.each(types.map((desc) => [desc.typeName, desc] as const))("write %s as toJson does", (_, desc) => {
    fc.assert(
      fc.property(messageInit(desc, 2), (init) => {
        const message = create(desc, init as never);
        expect(written(() => JSON.stringify(writers.toJson(desc, message)))).toBe(
          written(() => toJsonString(desc, message)),
        );
      }),
      { numRuns: 40 },
    );
  });

  it("leave a value of the wrong type to toJson, which refuses it", () => {
    const desc = types.find((d) =>
      d.fields.some((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING),
    )!;
    const field = desc.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING)!;
    const message = create(desc) as unknown as Record<string, unknown>;
    if (field.oneof) message[field.oneof.localName] = { case: field.localName, value: 7 };
    else message[field.localName] = 7;
    expect(() => writers.toJson(desc, message)).toThrow();
  });
});

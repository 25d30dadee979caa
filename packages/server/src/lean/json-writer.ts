/**
 * Answers in proto3 JSON without reflection: for each message type, a writer is compiled once
 * from its descriptor (fields in number order, each with its JSON name, presence test and value
 * conversion) and then runs as plain property reads. protobuf-es's `toJson` builds a reflection
 * object per message and consults the descriptor per field and value, a large share of a small
 * call's time (bench/REPORT.md).
 *
 * The output is what `toJson` writes with default options, key order included; the comparison
 * test (json-writer.test.ts) holds every message type of the API to that. Well-known types other
 * than Timestamp, messages with required fields and anything unexpected (a value of the wrong
 * type) are left to `toJson` itself, so that its refusals stay the refusals.
 *
 * @module
 */
import { type DescField, type DescMessage, type JsonValue, ScalarType, toJson } from "@bufbuild/protobuf";
import { isScalarZeroValue } from "@bufbuild/protobuf/reflect";
import { base64Encode } from "@bufbuild/protobuf/wire";

type AnyMessage = Record<string, unknown>;
type Write = (message: AnyMessage) => JsonValue;

/** Field presence as protobuf-es numbers it (FeatureSet.FieldPresence). */
const IMPLICIT = 2;
const LEGACY_REQUIRED = 3;

/** Compiled writers, one per message type, made on first use. */
export interface JsonWriters {
  /** The message as `toJson(schema, message)` would write it. */
  toJson(schema: DescMessage, message: object): JsonValue;
}

export function createJsonWriters(): JsonWriters {
  const compiled = new Map<DescMessage, Write>();
  const writerOf = (desc: DescMessage): Write => {
    let write = compiled.get(desc);
    if (write === undefined) {
      // Set before compiling, so recursive types find it; resolved at first call.
      compiled.set(desc, (message) => write!(message));
      write = compileMessage(desc, writerOf);
      compiled.set(desc, write);
    }
    return write;
  };
  return {
    toJson(schema, message) {
      try {
        return writerOf(schema)(message as AnyMessage);
      } catch {
        // Whatever the compiled writer did not expect, protobuf-es writes or refuses itself.
        return toJson(schema, message as never);
      }
    },
  };
}

/** Thrown inside a writer when a value is not what its field declares: `toJson` takes over. */
class Unexpected extends Error {}

function compileMessage(desc: DescMessage, writerOf: (desc: DescMessage) => Write): Write {
  if (desc.typeName === "google.protobuf.Timestamp") return writeTimestamp;
  if (
    desc.typeName.startsWith("google.protobuf.") ||
    desc.fields.some((f) => f.presence === LEGACY_REQUIRED)
  ) {
    // Other well-known types have JSON forms of their own; a required field needs its refusal.
    return (message) => toJson(desc, message as never);
  }
  const fields = [...desc.fields]
    .sort((a, b) => a.number - b.number)
    .map((field) => ({ name: field.jsonName, read: readerOf(field), write: valueWriterOf(field, writerOf) }));
  return (message) => {
    const json: Record<string, JsonValue> = {};
    for (const { name, read, write } of fields) {
      const value = read(message);
      if (value !== undefined) json[name] = write(value);
    }
    return json;
  };
}

/** The field's value when it is set (as reflection's `isSet` decides), else undefined. */
function readerOf(field: DescField): (message: AnyMessage) => unknown {
  const name = field.localName;
  if (field.oneof !== undefined) {
    const oneof = field.oneof.localName;
    return (message) => {
      const selected = message[oneof] as { case?: string; value?: unknown };
      return selected.case === name ? selected.value : undefined;
    };
  }
  if (field.presence !== IMPLICIT) {
    return (message) =>
      message[name] !== undefined && Object.hasOwn(message, name) ? message[name] : undefined;
  }
  switch (field.fieldKind) {
    case "list":
      return (message) => ((message[name] as unknown[]).length > 0 ? message[name] : undefined);
    case "map":
      return (message) => (Object.keys(message[name] as object).length > 0 ? message[name] : undefined);
    case "scalar": {
      const scalar = field.scalar;
      return (message) => (isScalarZeroValue(scalar, message[name]) ? undefined : message[name]);
    }
    case "enum": {
      const zero = field.enum.values[0]!.number;
      return (message) => (message[name] !== zero ? message[name] : undefined);
    }
    default:
      throw new Unexpected(`message field ${field.name} with implicit presence`);
  }
}

function valueWriterOf(
  field: DescField,
  writerOf: (desc: DescMessage) => Write,
): (value: unknown) => JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return scalarWriter(field.scalar);
    case "enum":
      return enumWriter(field.enum);
    case "message": {
      const message = field.message;
      return (value) => writerOf(message)(value as AnyMessage);
    }
    case "list": {
      const item =
        field.listKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.listKind === "enum"
            ? enumWriter(field.enum)
            : (value: unknown) => writerOf(field.message)(value as AnyMessage);
      return (value) => (value as unknown[]).map(item);
    }
    case "map": {
      const entry =
        field.mapKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.mapKind === "enum"
            ? enumWriter(field.enum)
            : (value: unknown) => writerOf(field.message)(value as AnyMessage);
      return (value) => {
        const json: Record<string, JsonValue> = {};
        for (const [key, each] of Object.entries(value as object)) json[key] = entry(each);
        return json;
      };
    }
  }
}

function enumWriter(desc: { readonly typeName: string; readonly value: Record<number, { name: string }> }) {
  if (desc.typeName === "google.protobuf.NullValue") return () => null;
  return (value: unknown): JsonValue => {
    if (typeof value !== "number") throw new Unexpected("enum value is not a number");
    return desc.value[value]?.name ?? value;
  };
}

function scalarWriter(type: ScalarType): (value: unknown) => JsonValue {
  const expect = (kind: string) => (value: unknown) => {
    if (typeof value !== kind) throw new Unexpected(`expected ${kind}`);
    return value as JsonValue;
  };
  switch (type) {
    case ScalarType.INT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT32:
      return expect("number");
    case ScalarType.STRING:
      return expect("string");
    case ScalarType.BOOL:
      return expect("boolean");
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (value) => {
        if (typeof value !== "number") throw new Unexpected("expected number");
        if (Number.isNaN(value)) return "NaN";
        if (value === Number.POSITIVE_INFINITY) return "Infinity";
        if (value === Number.NEGATIVE_INFINITY) return "-Infinity";
        return value;
      };
    case ScalarType.BYTES:
      return (value) => {
        if (!(value instanceof Uint8Array)) throw new Unexpected("expected bytes");
        return base64Encode(value);
      };
    default:
      // The 64-bit integers: a decimal string.
      return (value) => {
        if (typeof value === "bigint" || typeof value === "string") return value.toString();
        if (typeof value === "number" && Number.isInteger(value)) return value.toString();
        throw new Unexpected("expected a 64-bit integer");
      };
  }
}

const earliest = Date.parse("0001-01-01T00:00:00Z");
const latest = Date.parse("9999-12-31T23:59:59Z");

/** RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as protobuf-es writes it. */
function writeTimestamp(message: AnyMessage): JsonValue {
  const { seconds, nanos } = message as { seconds: bigint; nanos: number };
  const ms = Number(seconds) * 1000;
  if (!(ms >= earliest && ms <= latest) || !(nanos >= 0 && nanos <= 999_999_999)) {
    throw new Unexpected("timestamp out of range");
  }
  let z = "Z";
  if (nanos > 0) {
    const digits = (nanos + 1_000_000_000).toString().substring(1);
    z = digits.endsWith("000000")
      ? `.${digits.substring(0, 3)}Z`
      : digits.endsWith("000")
        ? `.${digits.substring(0, 6)}Z`
        : `.${digits}Z`;
  }
  return new Date(ms).toISOString().replace(".000Z", z);
}

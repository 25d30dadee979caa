/**
 * Field lookups and the conversion of URL text (path variables, query values) to protobuf JSON.
 *
 * @module
 */
import {
  type DescEnum,
  type DescField,
  type DescMessage,
  fromJson,
  type JsonValue,
  ScalarType,
} from "@bufbuild/protobuf";
import { InvalidArgumentError } from "@wap/core";

/** How a field (or a list field's element) is written as URL text; undefined: it cannot be. */
export type TextKind = "string" | "bool" | "integer" | "number" | "enum" | "wkt";

// Well-known types whose JSON form is a single string (or a wrapped scalar).
const stringWkts = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
]);
const wrapperWkts = new Set([
  "google.protobuf.DoubleValue",
  "google.protobuf.FloatValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.BoolValue",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
]);

const wktExamples: Record<string, string> = {
  "google.protobuf.Timestamp": 'an RFC 3339 timestamp such as "2026-01-02T03:04:05Z"',
  "google.protobuf.Duration": 'a duration in seconds such as "3600s" or "1.5s"',
  "google.protobuf.FieldMask": 'comma-separated lowerCamelCase paths such as "name,description"',
};

function scalarKind(scalar: ScalarType): TextKind {
  switch (scalar) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return "string";
    case ScalarType.BOOL:
      return "bool";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return "number";
    default:
      return "integer";
  }
}

function messageKind(message: DescMessage): TextKind | undefined {
  if (stringWkts.has(message.typeName)) return "wkt";
  if (wrapperWkts.has(message.typeName)) {
    const inner = message.fields[0];
    return inner?.fieldKind === "scalar" ? scalarKind(inner.scalar) : undefined;
  }
  return undefined;
}

export function textFieldKind(field: DescField): TextKind | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarKind(field.scalar);
    case "enum":
      return "enum";
    case "message":
      return messageKind(field.message);
    case "list":
      if (field.listKind === "scalar") return scalarKind(field.scalar);
      if (field.listKind === "enum") return "enum";
      return messageKind(field.message);
    case "map":
      return undefined;
  }
}

function enumOf(field: DescField): DescEnum | undefined {
  if (field.fieldKind === "enum") return field.enum;
  if (field.fieldKind === "list" && field.listKind === "enum") return field.enum;
  return undefined;
}

/** lowerCamelCase of a proto name, as protoc derives json_name when none is given. */
function camel(name: string): string {
  return name.replace(/_+([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Whether `key` names `field`: by proto name, or (if `anyName`) by JSON name or lowerCamelCase too. */
export function fieldNamed(field: DescField, key: string, anyName: boolean): boolean {
  return field.name === key || (anyName && (field.jsonName === key || camel(field.name) === key));
}

/**
 * Resolves dotted names (`config.record_sessions`) to the chain of fields, descending only through
 * singular message fields that are not string-form well-known types.
 */
export function resolveFieldPath(
  root: DescMessage,
  names: readonly string[],
  match: "name" | "any",
): DescField[] | undefined {
  const chain: DescField[] = [];
  let message: DescMessage | undefined = root;
  for (const name of names) {
    if (!message) return undefined;
    const field: DescField | undefined = message.fields.find((f) => fieldNamed(f, name, match === "any"));
    if (!field) return undefined;
    chain.push(field);
    message =
      field.fieldKind === "message" && messageKind(field.message) === undefined ? field.message : undefined;
  }
  return chain.length > 0 ? chain : undefined;
}

/**
 * Converts one URL text value to the JSON value `fromJson` expects for the field. `label` names the
 * value's origin for error messages (`query parameter "limit"`).
 */
export function textToJson(field: DescField, text: string, label: string, fieldPath: string): JsonValue {
  const bad = (expected: string): never => {
    throw new InvalidArgumentError(`${label}: expected ${expected}, got ${JSON.stringify(text)}`, {
      violations: [{ field: fieldPath, description: `expected ${expected}` }],
    });
  };
  switch (textFieldKind(field)) {
    case "string":
      // Bytes are base64 text; fromJson checks them.
      return text;
    case "wkt": {
      // Checked here so that the error names the query key rather than google.protobuf.Timestamp.
      const message = field.fieldKind === "message" || field.fieldKind === "list" ? field.message : undefined;
      if (message) {
        try {
          fromJson(message, text);
        } catch {
          return bad(wktExamples[message.typeName] ?? message.typeName);
        }
      }
      return text;
    }
    case "bool":
      if (text === "true") return true;
      if (text === "false") return false;
      return bad("true or false");
    case "integer":
      // int64 stays a string (JSON numbers lose precision); fromJson checks the range.
      if (!/^-?\d+$/.test(text)) return bad("an integer");
      return text;
    case "number":
      if (text === "NaN" || text === "Infinity" || text === "-Infinity") return text;
      if (text.trim() === "" || !Number.isFinite(Number(text))) return bad("a number");
      return Number(text);
    case "enum": {
      if (/^-?\d+$/.test(text)) return Number(text);
      const desc = enumOf(field);
      if (desc && !desc.values.some((v) => v.name === text)) {
        return bad(`one of ${desc.values.map((v) => v.name).join(", ")} (or its number)`);
      }
      return text;
    }
    default:
      throw new InvalidArgumentError(`${label}: field ${fieldPath} cannot be given as text`, {
        violations: [{ field: fieldPath, description: "not settable from the URL" }],
      });
  }
}

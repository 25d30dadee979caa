/**
 * JSON Schemas (OpenAPI 3.1) of protobuf messages as their canonical JSON mapping writes them:
 * fields by JSON name, 64-bit integers as strings, enums by name, bytes as base64, and the
 * well-known types in their special JSON forms.
 *
 * @module
 */
import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

export type JsonSchema = Record<string, unknown>;

/** `#/components/schemas/<name>` for a message, collecting every message it reaches. */
export class SchemaCollector {
  readonly schemas: Record<string, JsonSchema> = {};

  ref(message: DescMessage): JsonSchema {
    const special = wellKnown(message);
    if (special !== undefined) return special;
    const name = message.typeName;
    if (!(name in this.schemas)) {
      // Placed first: recursive messages refer to themselves.
      this.schemas[name] = {};
      this.schemas[name] = this.#object(message);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** The schema of one field's value (for a `body: "<field>"` rule). */
  field(field: DescField): JsonSchema {
    switch (field.fieldKind) {
      case "scalar":
        return scalar(field.scalar);
      case "enum":
        return enumSchema(field.enum);
      case "message":
        return this.ref(field.message);
      case "list":
        return { type: "array", items: this.#element(field) };
      case "map":
        return { type: "object", additionalProperties: this.#mapValue(field) };
    }
  }

  #element(field: DescField & { fieldKind: "list" }): JsonSchema {
    if (field.listKind === "scalar") return scalar(field.scalar);
    if (field.listKind === "enum") return enumSchema(field.enum);
    return this.ref(field.message);
  }

  #mapValue(field: DescField & { fieldKind: "map" }): JsonSchema {
    if (field.mapKind === "scalar") return scalar(field.scalar);
    if (field.mapKind === "enum") return enumSchema(field.enum);
    return this.ref(field.message);
  }

  #object(message: DescMessage): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    for (const field of message.fields) properties[field.jsonName] = this.field(field);
    return {
      type: "object",
      properties,
      additionalProperties: false,
    };
  }
}

function scalar(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", format: "byte", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0, maximum: 4294967295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64", pattern: "^[0-9]+$" };
  }
}

function enumSchema(desc: DescEnum): JsonSchema {
  return { type: "string", enum: desc.values.map((v) => v.name) };
}

const wellKnownSchemas: Readonly<Record<string, JsonSchema>> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.FieldMask": { type: "string" },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Empty": { type: "object", additionalProperties: false },
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] },
  "google.protobuf.StringValue": { type: "string" },
  "google.protobuf.BytesValue": { type: "string", format: "byte" },
  "google.protobuf.BoolValue": { type: "boolean" },
  "google.protobuf.Int32Value": { type: "integer", format: "int32" },
  "google.protobuf.UInt32Value": { type: "integer", format: "int64", minimum: 0 },
  "google.protobuf.Int64Value": { type: "string", format: "int64" },
  "google.protobuf.UInt64Value": { type: "string", format: "uint64" },
  "google.protobuf.FloatValue": { type: "number", format: "float" },
  "google.protobuf.DoubleValue": { type: "number", format: "double" },
};

function wellKnown(message: DescMessage): JsonSchema | undefined {
  return wellKnownSchemas[message.typeName];
}

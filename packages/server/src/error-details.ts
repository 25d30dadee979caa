/**
 * The two google.rpc error details the server attaches: `ErrorInfo` (the stable `reason` of a
 * PlatformError) and `BadRequest` (its field violations). The contract does not vendor
 * google/rpc/error_details.proto, so the descriptors are built here, with the field numbers of
 * the real file so clients that know it decode them as usual.
 *
 * @module
 */
import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

const { STRING: TYPE_STRING, MESSAGE: TYPE_MESSAGE } = FieldDescriptorProto_Type;
const { OPTIONAL, REPEATED } = FieldDescriptorProto_Label;

const errorDetailsFile = create(FileDescriptorProtoSchema, {
  name: "google/rpc/error_details.proto",
  package: "google.rpc",
  syntax: "proto3",
  messageType: [
    {
      // The `metadata` map (field 3) is left out: the server never sets it.
      name: "ErrorInfo",
      field: [
        { name: "reason", number: 1, type: TYPE_STRING, label: OPTIONAL, jsonName: "reason" },
        { name: "domain", number: 2, type: TYPE_STRING, label: OPTIONAL, jsonName: "domain" },
      ],
    },
    {
      name: "BadRequest",
      field: [
        {
          name: "field_violations",
          number: 1,
          type: TYPE_MESSAGE,
          typeName: ".google.rpc.BadRequest.FieldViolation",
          label: REPEATED,
          jsonName: "fieldViolations",
        },
      ],
      nestedType: [
        {
          name: "FieldViolation",
          field: [
            { name: "field", number: 1, type: TYPE_STRING, label: OPTIONAL, jsonName: "field" },
            { name: "description", number: 2, type: TYPE_STRING, label: OPTIONAL, jsonName: "description" },
          ],
        },
      ],
    },
  ],
});

const registry = createFileRegistry(errorDetailsFile, () => undefined);

function message(typeName: string): DescMessage {
  const desc = registry.getMessage(typeName);
  if (!desc) throw new Error(`error-details: ${typeName} missing from the built descriptor`);
  return desc;
}

/** `google.rpc.ErrorInfo { reason, domain }`. */
export const ErrorInfoSchema = message("google.rpc.ErrorInfo");
/** `google.rpc.BadRequest { field_violations: [{ field, description }] }`. */
export const BadRequestSchema = message("google.rpc.BadRequest");
/** The domain named in every ErrorInfo this server sends. */
export const errorDomain = "platform.v1";
/** A registry holding both, for clients and tests that decode details. */
export const errorDetailsRegistry = registry;

/**
 * gRPC server reflection, v1 and v1alpha (grpcurl, grpcui, Postman and `buf curl` without a schema
 * use it to discover services and their messages).
 *
 * The descriptors served are those of the published contract: proto3 files with `optional` on
 * every singular scalar and enum field. The generated code embeds an edition-2023 rendering of the
 * same files (see packages/api/scripts/generate.ts), which toolchains older than protobuf 27 cannot
 * read; it is turned back into proto3 here (explicit presence becomes `proto3_optional` with its
 * synthetic oneof), the very descriptor protoc makes of the proto3 source.
 *
 * @module
 */
import {
  clearField,
  clone,
  createFileRegistry,
  createRegistry,
  type DescFile,
  type DescMethodBiDiStreaming,
  type DescService,
  isFieldSet,
  type Registry,
  toBinary,
} from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  Edition,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FieldDescriptorProtoSchema,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { file_grpc_reflection_v1_reflection, ServerReflection, type ServerReflectionRequest } from "@wap/api";

/** The v1alpha service: the same messages in package grpc.reflection.v1alpha. */
export const serverReflectionV1alpha: DescService = (() => {
  const proto = clone(FileDescriptorProtoSchema, file_grpc_reflection_v1_reflection.proto);
  proto.name = "grpc/reflection/v1alpha/reflection.proto";
  proto.package = "grpc.reflection.v1alpha";
  const rename = (name: string) => name.replace(".grpc.reflection.v1.", ".grpc.reflection.v1alpha.");
  const renameFields = (message: DescriptorProto) => {
    for (const field of message.field) field.typeName = rename(field.typeName);
    message.nestedType.forEach(renameFields);
  };
  proto.messageType.forEach(renameFields);
  for (const service of proto.service) {
    for (const method of service.method) {
      method.inputType = rename(method.inputType);
      method.outputType = rename(method.outputType);
    }
  }
  const file = createFileRegistry(proto, () => undefined).getFile(proto.name);
  const service = file?.services[0];
  if (!service) throw new Error("the v1alpha reflection service could not be built");
  return service;
})();

/** Registers ServerReflection v1 and v1alpha, describing `services` (and everything they use). */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const index = new DescriptorIndex(services);
  for (const service of [ServerReflection, serverReflectionV1alpha]) {
    const method = service.methods[0] as DescMethodBiDiStreaming | undefined;
    if (method?.methodKind !== "bidi_streaming") continue;
    // v1alpha's messages are v1's under another package: answers are built as plain objects.
    router.rpc(method, async function* (requests: AsyncIterable<unknown>) {
      for await (const request of requests) yield index.answer(request as ServerReflectionRequest) as never;
    });
  }
}

/** gRPC's NOT_FOUND, as ErrorResponse.error_code carries it. */
const notFound = 5;

class DescriptorIndex {
  readonly #services: readonly DescService[];
  readonly #files = new Map<string, DescFile>();
  readonly #registry: Registry;
  readonly #encoded = new Map<string, Uint8Array>();

  constructor(services: readonly DescService[]) {
    this.#services = services;
    const add = (file: DescFile) => {
      if (this.#files.has(`${file.name}.proto`)) return;
      this.#files.set(`${file.name}.proto`, file);
      file.dependencies.forEach(add);
    };
    for (const service of services) add(service.file);
    this.#registry = createRegistry(...this.#files.values());
  }

  answer(request: ServerReflectionRequest): object {
    const common = { validHost: request.host, originalRequest: request };
    const respond = (messageResponse: object) => ({ ...common, messageResponse });
    const files = (file: DescFile | undefined, what: string) =>
      file
        ? respond({
            case: "fileDescriptorResponse",
            value: { fileDescriptorProto: this.#withDependencies(file) },
          })
        : respond({
            case: "errorResponse",
            value: { errorCode: notFound, errorMessage: `${what} not found` },
          });
    const req = request.messageRequest;
    switch (req.case) {
      case "listServices":
        return respond({
          case: "listServicesResponse",
          value: { service: this.#services.map((s) => ({ name: s.typeName })) },
        });
      case "fileByFilename":
        return files(this.#files.get(req.value), `file ${req.value}`);
      case "fileContainingSymbol":
        return files(this.#fileOfSymbol(req.value), `symbol ${req.value}`);
      case "fileContainingExtension": {
        const ext = this.#registry.getExtensionFor(
          this.#registry.getMessage(req.value.containingType) ??
            ({ typeName: req.value.containingType } as never),
          req.value.extensionNumber,
        );
        return files(ext?.file, `extension ${req.value.extensionNumber} of ${req.value.containingType}`);
      }
      case "allExtensionNumbersOfType": {
        const numbers: number[] = [];
        for (const type of this.#registry) {
          if (type.kind === "extension" && type.extendee.typeName === req.value) numbers.push(type.number);
        }
        return respond({
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: req.value, extensionNumber: numbers },
        });
      }
      default:
        return respond({ case: "errorResponse", value: { errorCode: 3, errorMessage: "empty request" } });
    }
  }

  #fileOfSymbol(symbol: string): DescFile | undefined {
    const type = this.#registry.get(symbol);
    if (type) return type.kind === "extension" ? type.file : type.file;
    // A method: <package>.<Service>.<Method>; a field or enum value: <type>.<name>.
    const dot = symbol.lastIndexOf(".");
    const parent = dot > 0 ? this.#registry.get(symbol.slice(0, dot)) : undefined;
    return parent?.file;
  }

  /** The file first, then every file it depends on, each once. */
  #withDependencies(file: DescFile): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile) => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(this.#encode(f));
      f.dependencies.forEach(visit);
    };
    visit(file);
    return out;
  }

  #encode(file: DescFile): Uint8Array {
    let bytes = this.#encoded.get(file.name);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, asProto3(file));
      this.#encoded.set(file.name, bytes);
    }
    return bytes;
  }
}

/**
 * The proto3 descriptor of a file generated from its edition-2023 rendering; other files as they
 * are. Singular scalar and enum fields outside a oneof get `proto3_optional` and a synthetic oneof
 * `_<name>`, declared after the real ones, as protoc writes them.
 */
export function asProto3(file: DescFile): FileDescriptorProto {
  if (file.edition !== Edition.EDITION_2023) return file.proto;
  const proto = clone(FileDescriptorProtoSchema, file.proto);
  proto.syntax = "proto3";
  clearField(proto, FileDescriptorProtoSchema.field.edition);
  if (proto.options) proto.options.features = undefined;
  const visit = (message: DescriptorProto) => {
    // Map entries keep their key and value as they are.
    if (message.options?.mapEntry) return;
    for (const field of message.field) {
      if (field.options) field.options.features = undefined;
      const singular = field.label === FieldDescriptorProto_Label.OPTIONAL;
      const scalarOrEnum =
        field.type !== FieldDescriptorProto_Type.MESSAGE && field.type !== FieldDescriptorProto_Type.GROUP;
      if (singular && scalarOrEnum && !isFieldSet(field, FieldDescriptorProtoSchema.field.oneofIndex)) {
        field.proto3Optional = true;
        field.oneofIndex = message.oneofDecl.length;
        message.oneofDecl.push({ $typeName: "google.protobuf.OneofDescriptorProto", name: `_${field.name}` });
      }
    }
    message.nestedType.forEach(visit);
  };
  proto.messageType.forEach(visit);
  return proto;
}

/**
 * REST responses: the whole response message as canonical protobuf JSON.
 *
 * @module
 */
import { type DescMethod, type Message, toJson } from "@bufbuild/protobuf";

/**
 * Serialises a response message with protobuf-es's default JSON options: unset fields are left out
 * (a set field keeps its value even when it is zero, thanks to explicit presence), enums are written
 * by name and 64-bit integers as strings.
 */
export function writeResponse(method: DescMethod, message: Message): string {
  if (message.$typeName !== method.output.typeName) {
    throw new TypeError(`${method.name} returns ${method.output.typeName}, got ${message.$typeName}`);
  }
  return JSON.stringify(toJson(method.output, message));
}

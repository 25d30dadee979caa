import { type DescMessage, isFieldSet, type Message } from "@bufbuild/protobuf";

// Messages that stay whole: the validators turn them into seconds and Dates.
const keptWhole = new Set(["google.protobuf.Duration", "google.protobuf.Timestamp"]);

/**
 * Copies a request message into a plain object that holds only the fields the client sent.
 *
 * The contract uses explicit field presence (proto3 `optional` on every scalar and enum field): a
 * key missing from the JSON is unset, while `""`, `0` and `false` are set. protobuf-es fills unset scalars with zero values, so the
 * validators would not see the difference; this is where it is kept. Lists and maps have no
 * presence and are always copied.
 */
export function presentFields(desc: DescMessage, message: Message): Record<string, unknown> {
  const source = message as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of desc.fields) {
    if (field.oneof) continue;
    const value = source[field.localName];
    if (field.fieldKind === "list" || field.fieldKind === "map") {
      out[field.localName] = value;
      continue;
    }
    if (!isFieldSet(message, field)) continue;
    if (field.fieldKind === "message" && !keptWhole.has(field.message.typeName)) {
      out[field.localName] = presentFields(field.message, value as Message);
    } else {
      out[field.localName] = value;
    }
  }
  for (const oneof of desc.oneofs) {
    const selected = source[oneof.localName] as { case: string | undefined } | undefined;
    if (selected?.case !== undefined) out[oneof.localName] = selected;
  }
  return out;
}

/**
 * The contract's presence rule and its edition-2023 rendering (see generate.ts).
 *
 * Rule: in `proto/platform/v1`, every singular scalar or enum field outside a oneof is declared
 * `optional` (explicit presence). Lists, maps, messages and oneof members have their own presence
 * and take no label.
 */

const scalarTypes = new Set(
  "string bool bytes int32 int64 uint32 uint64 sint32 sint64 fixed32 fixed64 sfixed32 sfixed64 double float".split(
    " ",
  ),
);
const notFieldTypes = new Set([
  "repeated",
  "optional",
  "map",
  "option",
  "reserved",
  "rpc",
  "returns",
  "enum",
]);

export interface PresenceViolation {
  file: string;
  line: number;
  text: string;
}

interface FieldLine {
  index: number;
  optional: boolean;
  needsPresence: boolean;
}

function enumNames(sources: Map<string, string>): Set<string> {
  const names = new Set<string>();
  for (const text of sources.values())
    for (const m of text.matchAll(/^\s*enum\s+(\w+)/gm)) if (m[1]) names.add(m[1]);
  return names;
}

function fieldLines(text: string, enums: Set<string>): FieldLine[] {
  const out: FieldLine[] = [];
  let depth = 0;
  let oneofDepth = -1;
  let messageDepth = 0;
  const lines = text.split("\n");
  lines.forEach((line, index) => {
    const code = line.replace(/\/\/.*$/, "");
    if (/^\s*oneof\s+\w+\s*\{/.test(code)) oneofDepth = depth;
    const field = code.match(/^\s*(optional\s+)?([\w.]+)\s+\w+\s*=\s*\d+/);
    if (field && !notFieldTypes.has(field[2] ?? "") && messageDepth > 0) {
      const type = field[2] ?? "";
      const scalarOrEnum = scalarTypes.has(type) || enums.has(type.split(".").pop() ?? "");
      out.push({ index, optional: field[1] !== undefined, needsPresence: scalarOrEnum && oneofDepth < 0 });
    }
    if (/^\s*message\s+\w+\s*\{/.test(code)) messageDepth = Math.max(messageDepth, 1);
    for (const ch of code) {
      if (ch === "{") depth++;
      if (ch === "}") {
        depth--;
        if (depth === oneofDepth) oneofDepth = -1;
        if (depth === 0) messageDepth = 0;
      }
    }
  });
  return out;
}

/** Singular scalar and enum fields declared without `optional`. */
export function presenceViolations(sources: Map<string, string>): PresenceViolation[] {
  const enums = enumNames(sources);
  const violations: PresenceViolation[] = [];
  for (const [file, text] of sources) {
    const lines = text.split("\n");
    for (const field of fieldLines(text, enums)) {
      if (field.needsPresence && !field.optional) {
        violations.push({ file, line: field.index + 1, text: (lines[field.index] ?? "").trim() });
      }
    }
  }
  return violations;
}

/** The same files in edition 2023 (explicit presence everywhere), for protoc-gen-es. */
export function renderEdition2023(sources: Map<string, string>): Map<string, string> {
  const violations = presenceViolations(sources);
  if (violations.length > 0) {
    const list = violations.map((v) => `  ${v.file}:${v.line}: ${v.text}`).join("\n");
    throw new Error(`every singular scalar or enum field must be declared \`optional\`:\n${list}`);
  }
  const enums = enumNames(sources);
  const out = new Map<string, string>();
  for (const [file, text] of sources) {
    if (!/^syntax = "proto3";$/m.test(text)) throw new Error(`${file}: expected syntax = "proto3";`);
    const lines = text.split("\n");
    for (const field of fieldLines(text, enums)) {
      if (field.optional) lines[field.index] = (lines[field.index] ?? "").replace(/\boptional\s+/, "");
    }
    out.set(file, lines.join("\n").replace(/^syntax = "proto3";$/m, 'edition = "2023";'));
  }
  return out;
}

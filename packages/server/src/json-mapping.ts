/**
 * A request's JSON checked against the contract's JSON mapping before protobuf-es decodes it, on
 * every path that reads JSON (the lean unary path, connect-node, REST). Two reasons:
 *
 * - protobuf-es reads a timestamp with `Date.UTC`, which moves impossible dates instead of
 *   refusing them (`2030-02-29` becomes March 1st, `T24:00:00` the next day). Timestamps are
 *   checked strictly here: RFC 3339 with `T` and `Z` or an offset, at most 9 fractional digits,
 *   the day within its month, hours 00-23, minutes and seconds 00-59 (the protobuf JSON mapping
 *   smears leap seconds, so `:60` is refused), 0001-01-01 to 9999-12-31 once in UTC.
 * - its errors name the message type, not the field (`cannot decode message
 *   google.protobuf.Duration from JSON: "1h"`). Here the first field that does not fit is named
 *   with the form it expects, and an enum lists its values.
 *
 * Only forms protobuf-es itself refuses are reported for the other kinds, so nothing it accepts
 * is refused here (timestamps excepted).
 *
 * @module
 */
import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type FieldViolation, InvalidArgumentError } from "@wap/core";

/** Throws InvalidArgumentError naming the first field of `json` that does not fit `desc`. */
export function checkJsonRequest(desc: DescMessage, json: unknown): void {
  const violation = jsonViolation(desc, json);
  if (violation === undefined) return;
  const where = violation.field === "" ? "" : `${violation.field}: `;
  throw new InvalidArgumentError(`invalid request: ${where}${violation.description}`, {
    violations: [violation],
  });
}

const decoder = new TextDecoder();

/**
 * {@link checkJsonRequest} on the bytes of a JSON message. Bytes that are not JSON at all are left
 * to the decoder, whose error says so.
 */
export function checkJsonRequestBytes(desc: DescMessage, bytes: Uint8Array): void {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(bytes));
  } catch {
    return;
  }
  checkJsonRequest(desc, json);
}

/** The first field of `json` that does not fit `desc`'s JSON mapping, or undefined. */
export function jsonViolation(desc: DescMessage, json: unknown, path = ""): FieldViolation | undefined {
  if (!isObject(json)) return { field: path, description: `expected a JSON object (got ${shown(json)})` };
  const fields = fieldsByKey(desc);
  for (const [key, value] of Object.entries(json)) {
    const field = fields.get(key);
    const at = path === "" ? key : `${path}.${key}`;
    if (field === undefined) {
      return { field: at, description: `key "${key}" is unknown (${desc.typeName} has no such field)` };
    }
    const problem = fieldViolation(field, value, path === "" ? field.jsonName : `${path}.${field.jsonName}`);
    if (problem) return problem;
  }
  return undefined;
}

function fieldViolation(field: DescField, value: unknown, at: string): FieldViolation | undefined {
  if (value === null) return undefined;
  switch (field.fieldKind) {
    case "list": {
      if (!Array.isArray(value))
        return { field: at, description: `expected a JSON array (got ${shown(value)})` };
      for (const [i, item] of value.entries()) {
        const problem = singularViolation(field, item, `${at}.${i}`);
        if (problem) return problem;
      }
      return undefined;
    }
    case "map": {
      if (!isObject(value)) return { field: at, description: `expected a JSON object (got ${shown(value)})` };
      for (const [key, item] of Object.entries(value)) {
        const problem = singularViolation(field, item, `${at}.${key}`);
        if (problem) return problem;
      }
      return undefined;
    }
    default:
      return singularViolation(field, value, at);
  }
}

/** One value of a field (the field itself, a list item or a map value). */
function singularViolation(field: DescField, value: unknown, at: string): FieldViolation | undefined {
  if (field.message) return messageViolation(field.message, value, at);
  if (field.enum) return enumViolation(field.enum, value, at);
  if (field.scalar !== undefined) return scalarViolation(field.scalar, value, at);
  return undefined;
}

function messageViolation(desc: DescMessage, value: unknown, at: string): FieldViolation | undefined {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp": {
      const problem = timestampProblem(value);
      return problem === undefined
        ? undefined
        : {
            field: at,
            description: `expected an RFC 3339 timestamp such as "2030-01-31T12:00:00Z" (${problem})`,
          };
    }
    case "google.protobuf.Duration":
      return typeof value === "string" && durationForm.test(value) && durationInRange(value)
        ? undefined
        : { field: at, description: `expected a duration in seconds such as "3600s" (got ${shown(value)})` };
    default:
      // Other well-known types have JSON forms of their own: protobuf-es reads them.
      if (desc.typeName.startsWith("google.protobuf.")) return undefined;
      return jsonViolation(desc, value, at);
  }
}

function enumViolation(desc: DescEnum, value: unknown, at: string): FieldViolation | undefined {
  if (desc.typeName === "google.protobuf.NullValue") return undefined;
  // Enums are open: any int32 is a value on the wire; names must be the contract's.
  if (typeof value === "number" && Number.isInteger(value) && Math.abs(value) <= 2 ** 31) return undefined;
  if (typeof value === "string" && desc.values.some((v) => v.name === value)) return undefined;
  const names = desc.values.map((v) => v.name).join(", ");
  return { field: at, description: `expected one of ${names} (got ${shown(value)})` };
}

function scalarViolation(type: ScalarType, value: unknown, at: string): FieldViolation | undefined {
  const expected = scalarExpectation(type, value);
  return expected === undefined
    ? undefined
    : { field: at, description: `expected ${expected} (got ${shown(value)})` };
}

/** What a scalar field expects, when `value` is not a form protobuf-es reads for it. */
function scalarExpectation(type: ScalarType, value: unknown): string | undefined {
  switch (type) {
    case ScalarType.STRING:
      return typeof value === "string" ? undefined : "a string";
    case ScalarType.BOOL:
      return typeof value === "boolean" ? undefined : "true or false";
    case ScalarType.BYTES:
      return typeof value === "string" && /^[A-Za-z0-9+/_-]*={0,2}$/.test(value)
        ? undefined
        : "a base64 string";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof value === "number") return undefined;
      return typeof value === "string" && (/^(NaN|-?Infinity)$/.test(value) || isNumeric(value))
        ? undefined
        : "a number";
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return integerIn(value, -(2 ** 31), 2 ** 31 - 1)
        ? undefined
        : "an integer from -2147483648 to 2147483647";
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return integerIn(value, 0, 2 ** 32 - 1) ? undefined : "an integer from 0 to 4294967295";
    default:
      // 64-bit integers: a JSON number or a decimal string.
      return (typeof value === "number" && Number.isInteger(value)) ||
        (typeof value === "string" && /^-?\d+$/.test(value))
        ? undefined
        : "an integer (a number or a decimal string)";
  }
}

function integerIn(value: unknown, min: number, max: number): boolean {
  const n =
    typeof value === "number" ? value : typeof value === "string" && isNumeric(value) ? Number(value) : NaN;
  return Number.isInteger(n) && n >= min && n <= max;
}

function isNumeric(text: string): boolean {
  return text.trim() === text && text !== "" && Number.isFinite(Number(text));
}

// -- Durations: "<seconds>[.<1 to 9 digits>]s", within ±315,576,000,000 s (10,000 years).

const durationForm = /^-?\d+(\.\d{1,9})?s$/;

function durationInRange(text: string): boolean {
  const seconds = text.slice(0, text.search(/[.s]/)).replace("-", "");
  return seconds.length < 12 || (seconds.length === 12 && seconds <= "315576000000");
}

// -- Timestamps.

const timestampForm =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

/** Why `value` is not a timestamp the JSON mapping allows, or undefined when it is one. */
export function timestampProblem(value: unknown): string | undefined {
  const got = `got ${shown(value)}`;
  if (typeof value !== "string") return got;
  const m = timestampForm.exec(value);
  if (!m) return `${got}: not of the form YYYY-MM-DDThh:mm:ss[.fraction]Z`;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12) return `${got}: month ${m[2]} is not 01 to 12`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `${got}: ${m[1]}-${m[2]} has ${days} days`;
  if (hour > 23) return `${got}: hour ${m[4]} is not 00 to 23`;
  if (minute > 59) return `${got}: minute ${m[5]} is not 00 to 59`;
  if (second > 59) return `${got}: second ${m[6]} is not 00 to 59 (leap seconds are smeared, never written)`;
  let offsetMinutes = 0;
  if (m[8] !== "Z") {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return `${got}: offset ${m[8]} is not -23:59 to +23:59`;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  if (year < 1) return `${got}: year 0000 is before 0001`;
  // The instant in UTC must stay within 0001-01-01 and 9999-12-31.
  const instant = utcMinutes(year, month, day, hour, minute) - offsetMinutes;
  if (instant < firstMinute || instant >= endMinute) {
    return `${got}: outside 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z`;
  }
  return undefined;
}

/** Minutes since the epoch; setUTCFullYear, unlike Date.UTC, takes years 0-99 as they are. */
function utcMinutes(year: number, month: number, day: number, hour: number, minute: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, 0, 0);
  return date.getTime() / 60_000;
}

const firstMinute = utcMinutes(1, 1, 1, 0, 0);
const endMinute = utcMinutes(10000, 1, 1, 0, 0);

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

// -- Helpers.

const fieldMaps = new WeakMap<DescMessage, Map<string, DescField>>();

/** A message's fields by both names protobuf-es reads (the JSON name and the proto name). */
function fieldsByKey(desc: DescMessage): Map<string, DescField> {
  let map = fieldMaps.get(desc);
  if (!map) {
    map = new Map();
    for (const field of desc.fields) {
      map.set(field.jsonName, field);
      map.set(field.name, field);
    }
    fieldMaps.set(desc, map);
  }
  return map;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A JSON value as an error message shows it: at most 60 characters, and by its kind when it is
 * nested too deep to serialise (a client may send any depth).
 */
export function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = Array.isArray(value) ? "an array" : "an object";
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

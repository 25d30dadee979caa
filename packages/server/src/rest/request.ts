/**
 * Builds the request message of a REST call from its path variables, query string and JSON body.
 *
 * Everything is gathered into one JSON object and decoded with a single `fromJson`, so a field the
 * caller did not send stays unset (explicit presence) and unknown fields are rejected exactly as on
 * the Connect path.
 *
 * @module
 */
import { type DescField, type DescMessage, fromJson, type JsonValue, type Message } from "@bufbuild/protobuf";
import { InvalidArgumentError } from "@wap/core";
import { checkJsonRequest, shown } from "../json-mapping.js";
import { resolveFieldPath, textFieldKind, textToJson } from "./fields.js";
import type { RestMatch } from "./routes.js";

export interface RestRequestInput {
  /** The URL query string. */
  readonly query?: URLSearchParams;
  /** The parsed JSON body, or undefined when the request has none. */
  readonly body?: unknown;
  /** The raw body text, as an alternative to `body`; parsed with {@link parseJsonBody}. */
  readonly bodyText?: string;
}

type JsonObject = Record<string, unknown>;

/** Parses a REST request body; an empty body is undefined. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InvalidArgumentError(`request body is not valid JSON: ${(e as Error).message}`);
  }
}

/** Builds the request message for a matched route. Throws InvalidArgumentError on any bad input. */
export function buildRequest(match: RestMatch, input: RestRequestInput): Message {
  const { method, rule, pathParams } = match;
  const schema = method.input;
  const rpc = `${method.parent.name}.${method.name}`;
  const body = input.bodyText !== undefined ? parseJsonBody(input.bodyText) : input.body;
  const root: JsonObject = Object.create(null);

  // 1. The body.
  if (rule.body === "*") {
    if (body !== undefined) {
      if (!isJsonObject(body)) throw invalid(`${rpc}: the request body must be a JSON object`);
      for (const [key, value] of Object.entries(body)) root[key] = value;
    }
  } else if (rule.body === "" && rule.pattern.case === "post" && body !== undefined && body !== null) {
    // A POST without a body rule takes its fields from the query string, and from a JSON body as
    // well: secrets such as refresh tokens then need not travel in URLs (and proxy logs).
    if (!isJsonObject(body)) throw invalid(`${rpc}: the request body must be a JSON object`);
    for (const [key, value] of Object.entries(body)) root[key] = value;
  } else if (rule.body === "") {
    // Clients often send `{}`; anything more would be silently lost, so refuse it.
    if (body !== undefined && body !== null && !(isJsonObject(body) && Object.keys(body).length === 0)) {
      const example = queryFields(schema, rule.body, pathParams)[0];
      const hint = example ? ` (e.g. ?${example.jsonName}=...)` : "";
      throw invalid(`${rpc} takes no request body over REST: send its fields as query parameters${hint}`);
    }
  } else {
    const field = schema.fields.find((f) => f.name === rule.body)!;
    if (body !== undefined) root[field.jsonName] = body;
  }

  // 2. The query string.
  if (input.query) bindQuery(root, schema, rule.body, pathParams, input.query, rpc);

  // 3. The path variables, which must agree with any copy of them in the body.
  for (const [fieldPath, text] of Object.entries(pathParams)) {
    const chain = resolveFieldPath(schema, fieldPath.split("."), "name");
    if (!chain) throw new Error(`${rpc}: path variable {${fieldPath}} names no request field`);
    const leaf = chain[chain.length - 1]!;
    const value = textToJson(leaf, text, `path parameter {${fieldPath}}`, fieldPath);
    const parent = descend(root, chain.slice(0, -1));
    const existing = take(parent, leaf);
    if (existing !== undefined && existing !== null && !sameScalar(existing, value, text)) {
      throw invalid(
        `path parameter {${fieldPath}} is ${JSON.stringify(text)} but the request body has ` +
          `${leaf.jsonName} = ${shown(existing)}; leave it out of the body or make them match`,
        fieldPath,
      );
    }
    parent[leaf.jsonName] = value;
  }

  checkJsonRequest(schema, root);
  try {
    return fromJson(schema, root as JsonValue);
  } catch (e) {
    throw new InvalidArgumentError(`invalid ${rpc} request: ${(e as Error).message}`, { cause: e });
  }
}

function bindQuery(
  root: JsonObject,
  schema: DescMessage,
  bodyRule: string,
  pathParams: Readonly<Record<string, string>>,
  query: URLSearchParams,
  rpc: string,
): void {
  const groups = new Map<string, { key: string; chain: DescField[]; values: string[] }>();
  for (const [key, text] of query) {
    const label = `query parameter ${JSON.stringify(key)}`;
    if (bodyRule === "*") {
      throw invalid(`${label} is not accepted: ${rpc} takes all its fields in the JSON body`, key);
    }
    const chain = resolveFieldPath(schema, key.split("."), "any");
    if (!chain) {
      const accepted = queryFields(schema, bodyRule, pathParams).map((f) => f.jsonName);
      const hint = accepted.length > 0 ? `accepted: ${accepted.join(", ")}` : "it takes no query parameters";
      throw invalid(`unknown ${label} for ${rpc} (${hint})`, key);
    }
    const head = chain[0]!;
    const leaf = chain[chain.length - 1]!;
    const fieldPath = chain.map((f) => f.name).join(".");
    if (bodyRule !== "" && head.name === bodyRule) {
      throw invalid(`${label}: ${head.jsonName} is taken from the request body`, fieldPath);
    }
    if (textFieldKind(leaf) === undefined) {
      throw invalid(
        leaf.fieldKind === "map" || leaf.fieldKind === "list"
          ? `${label}: ${fieldPath} cannot be set from the query string; use the Connect endpoint`
          : `${label}: ${fieldPath} is a message; set its fields with dotted keys such as "${key}.<field>"`,
        fieldPath,
      );
    }
    const group = groups.get(fieldPath);
    if (group) group.values.push(text);
    else groups.set(fieldPath, { key, chain, values: [text] });
  }

  for (const [fieldPath, { key, chain, values }] of groups) {
    const leaf = chain[chain.length - 1]!;
    const label = `query parameter ${JSON.stringify(key)}`;
    if (leaf.fieldKind !== "list" && values.length > 1) {
      throw invalid(`${label} is given ${values.length} times but ${fieldPath} is not repeated`, fieldPath);
    }
    const bound = pathParams[fieldPath];
    if (bound !== undefined) {
      const other = values.find((v) => v !== bound);
      if (other === undefined) continue;
      throw invalid(
        `${label} is ${JSON.stringify(other)} but the path says {${fieldPath}} = ${JSON.stringify(bound)}`,
        fieldPath,
      );
    }
    if (chain.length === 1 && (leaf.jsonName in root || leaf.name in root)) {
      throw invalid(`${label}: ${leaf.jsonName} is also in the request body; send it once`, fieldPath);
    }
    const value =
      leaf.fieldKind === "list"
        ? values.map((v) => textToJson(leaf, v, label, fieldPath))
        : textToJson(leaf, values[0]!, label, fieldPath);
    descend(root, chain.slice(0, -1))[leaf.jsonName] = value;
  }
}

/** The top-level fields that a rule takes from the query string. */
function queryFields(
  schema: DescMessage,
  bodyRule: string,
  pathParams: Readonly<Record<string, string>>,
): DescField[] {
  if (bodyRule === "*") return [];
  const bound = new Set(Object.keys(pathParams).map((p) => p.split(".")[0]));
  return schema.fields.filter((f) => f.name !== bodyRule && !bound.has(f.name));
}

/**
 * Walks (creating as needed) the nested JSON objects for a chain of message fields. Objects are
 * copied on the way down so that the caller's parsed body is never mutated.
 */
function descend(root: JsonObject, chain: readonly DescField[]): JsonObject {
  let object = root;
  for (const field of chain) {
    const existing = take(object, field);
    const next: JsonObject = Object.create(null);
    if (isJsonObject(existing)) {
      for (const [key, value] of Object.entries(existing)) next[key] = value;
    } else if (existing !== undefined && existing !== null) {
      throw invalid(`request body field ${field.jsonName} must be a JSON object`, field.name);
    }
    object[field.jsonName] = next;
    object = next;
  }
  return object;
}

/** Removes and returns a field's value from a JSON object, whichever of its names the key uses. */
function take(object: JsonObject, field: DescField): unknown {
  // fromJson accepts the proto name and the JSON name; both at once is ambiguous.
  const keys = Object.keys(object).filter((k) => k === field.name || k === field.jsonName);
  if (keys.length > 1)
    throw invalid(`request body sets ${field.jsonName} twice (as ${keys.join(" and ")})`, field.name);
  const key = keys[0];
  if (key === undefined) return undefined;
  const value = object[key];
  delete object[key];
  return value;
}

function sameScalar(existing: unknown, value: JsonValue, text: string): boolean {
  if (existing === value) return true;
  return (
    (typeof existing === "string" || typeof existing === "number" || typeof existing === "boolean") &&
    String(existing) === text
  );
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function invalid(message: string, field?: string): InvalidArgumentError {
  return new InvalidArgumentError(
    message,
    field === undefined ? {} : { violations: [{ field, description: message }] },
  );
}

/**
 * Sends a fuzzed case through the running server, as bytes on the wire: Connect unary (POST, or
 * GET for side-effect-free RPCs), Connect streams over HTTP/2 (enveloped frames, a short bounded
 * read, then the stream is cancelled), REST per the `google.api.http` binding (path variables
 * from the request, the rest in the query or the body), and REST server streams (NDJSON).
 */
import http2 from "node:http2";
import type { DescMethod } from "@bufbuild/protobuf";
import type { RestRoute } from "../../src/rest/index.js";
import type { FuzzCase, PathEncoding, RawMutation } from "./fuzz-cases.js";
import type { Json, JsonObject } from "./fuzz-values.js";

export type Transport = "connect" | "connect-get" | "connect-stream" | "rest" | "rest-stream";

/** What went out and what came back. */
export interface Exchange {
  readonly transport: Transport;
  readonly httpMethod: string;
  readonly url: string;
  readonly status: number;
  readonly header: (name: string) => string | null;
  /** The response body (unary), or the bytes read before the stream was cancelled, as text. */
  readonly text: string;
  readonly bytes: Buffer;
  /** The stream ended on its own (not cancelled by us). */
  readonly ended: boolean;
  /** HTTP/2 stream reset code the server sent, if it reset the stream. */
  readonly serverReset: number | undefined;
}

/** Longest wait for an answer to start: a request unanswered this long means the server hangs. */
const answerTimeoutMs = 20_000;

export const procedurePath = (method: DescMethod) => `/${method.parent.typeName}/${method.name}`;

// --- bodies ----------------------------------------------------------------------------------

function firstKey(request: Json): string {
  return request !== null && typeof request === "object" && !Array.isArray(request)
    ? (Object.keys(request)[0] ?? "name")
    : "name";
}

/** The body bytes: the request as JSON, then spoiled as the case says. */
export function serialise(request: Json, raw: RawMutation | undefined): string | Buffer {
  const text = JSON.stringify(request) ?? "null";
  if (!raw) return text;
  const isObjectText = text.startsWith("{") && text !== "{}";
  switch (raw.kind) {
    case "truncate":
      return text.slice(0, Math.floor(text.length * raw.at));
    case "append":
      return text + raw.text;
    case "bom":
      return `\uFEFF${text}`;
    case "invalid-utf8": {
      const bytes = Buffer.from(text);
      const at = Math.min(bytes.length, Math.floor(bytes.length * raw.at));
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff, 0xfe, 0xc3]), bytes.subarray(at)]);
    }
    case "empty":
      return "";
    case "huge":
      return JSON.stringify({ [firstKey(request)]: "x".repeat(1_100_000) });
    case "duplicate-key":
      return isObjectText ? `{"${firstKey(request)}":"dup",${text.slice(1)}` : '{"a":1,"a":2}';
    case "deep": {
      const open = raw.array ? "[" : '{"a":';
      const close = raw.array ? "]" : "}";
      const deep = `${open.repeat(raw.depth)}1${close.repeat(raw.depth)}`;
      return isObjectText
        ? `{"${firstKey(request)}":${deep},${text.slice(1)}`
        : `{"${firstKey(request)}":${deep}}`;
    }
    case "replace":
      return raw.text;
  }
}

// --- fetch -----------------------------------------------------------------------------------

async function exchange(
  transport: Transport,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | Buffer },
): Promise<Exchange> {
  const res = await fetch(url, {
    method: init.method,
    headers: init.headers,
    ...(init.body !== undefined && { body: init.body }),
    signal: AbortSignal.timeout(answerTimeoutMs),
  }).catch((error: unknown) => {
    throw new Error(`${init.method} ${url}: no answer (${describe(error)})`);
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return {
    transport,
    httpMethod: init.method,
    url,
    status: res.status,
    header: (name) => res.headers.get(name),
    text: bytes.toString("utf8"),
    bytes,
    ended: true,
    serverReset: undefined,
  };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
}

function requestHeaders(c: FuzzCase, auth: Record<string, string>, defaultType: string | undefined) {
  const headers: Record<string, string> = { ...c.headers, ...auth };
  const type = c.contentType ?? defaultType;
  if (type !== undefined && type !== "") headers["content-type"] = type;
  return headers;
}

/** Connect unary: POST the JSON body, or GET with the message in the query (`?connect=v1&...`). */
export function sendConnectUnary(
  baseUrl: string,
  method: DescMethod,
  c: FuzzCase,
  auth: Record<string, string>,
): Promise<Exchange> {
  const path = procedurePath(method);
  const body = serialise(c.request, c.raw);
  if (c.connectGet) {
    const text = Buffer.from(body);
    const message = c.connectGet.badBase64
      ? "!!not*base64"
      : c.connectGet.base64
        ? text.toString("base64url")
        : percentEncode(text.toString("utf8"));
    const query = `connect=v1&encoding=json&message=${message}${c.connectGet.base64 ? "&base64=1" : ""}`;
    return exchange("connect-get", `${baseUrl}${path}?${query}`, {
      method: "GET",
      headers: requestHeaders(c, auth, undefined),
    });
  }
  return exchange("connect", `${baseUrl}${path}`, {
    method: "POST",
    headers: requestHeaders(c, auth, "application/json"),
    body,
  });
}

// --- REST ------------------------------------------------------------------------------------

function asText(value: Json | undefined): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
}

/** Percent-encodes UTF-8; a lone surrogate (which encodeURIComponent refuses) becomes U+FFFD. */
function percentEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(Buffer.from(text, "utf8").toString("utf8"));
  }
}

function encodePathText(text: string, encoding: PathEncoding, multiSegment: boolean): string {
  const encode = (s: string) => (multiSegment ? s.split("/").map(percentEncode).join("/") : percentEncode(s));
  switch (encoding) {
    case "encoded":
      return encode(text);
    case "raw":
      return text;
    case "double":
      return percentEncode(encode(text));
    case "bad-percent":
      return `${encode(text)}%${text.length % 2 === 0 ? "" : "Z"}`;
  }
}

/** Query pairs of a JSON value: repeated keys for lists, dotted keys for nested objects. */
function queryPairs(key: string, value: Json, out: Array<[string, string]>, depth = 0): void {
  if (Array.isArray(value) && depth === 0) {
    for (const item of value) out.push([key, asText(item)]);
  } else if (value !== null && typeof value === "object" && !Array.isArray(value) && depth < 3) {
    for (const [sub, inner] of Object.entries(value)) queryPairs(`${key}.${sub}`, inner, out, depth + 1);
  } else {
    out.push([key, asText(value)]);
  }
}

/** The REST request of a case for one binding: path, query and body as the annotation says. */
export function renderRest(
  route: RestRoute,
  c: FuzzCase,
): { method: string; path: string; body?: string | Buffer } {
  const input = route.method.input;
  const request = c.request;
  const fields: JsonObject =
    request !== null && typeof request === "object" && !Array.isArray(request) ? { ...request } : {};
  const take = (protoName: string): Json | undefined => {
    const field = input.fields.find((f) => f.name === protoName);
    for (const key of [protoName, field?.jsonName]) {
      if (key !== undefined && key in fields) {
        const value = fields[key];
        delete fields[key];
        return value;
      }
    }
    return undefined;
  };

  // The path: literals as written, variables from the request (or the fallback when it has none).
  const segments: string[] = [];
  const { template } = route;
  for (let i = 0; i < template.segments.length; ) {
    const variable = template.variables.find((v) => v.start === i);
    if (variable) {
      const value = take(variable.fieldPath.split(".")[0]!);
      const text = value === undefined || value === null ? c.rest.fallback : asText(value);
      segments.push(encodePathText(text, c.rest.encoding, variable.multiSegment));
      i = variable.end;
      continue;
    }
    const segment = template.segments[i]!;
    segments.push(segment.kind === "literal" ? segment.value : "x");
    i++;
  }
  let path = `/${segments.join("/")}${template.verb ? `:${template.verb}` : ""}`;

  const httpMethod = c.rest.method ?? (route.httpMethod === "*" ? "POST" : route.httpMethod);
  const bodyRule = route.rule.body;
  let body: string | Buffer | undefined;
  const pairs: Array<[string, string]> = [];
  if (bodyRule === "*") {
    const root: Json =
      request !== null && typeof request === "object" && !Array.isArray(request) ? fields : request;
    body = serialise(root, c.raw);
  } else {
    if (bodyRule !== "") {
      const value = take(bodyRule);
      if (value !== undefined) body = serialise(value, c.raw);
    } else if (c.raw) {
      // No body in the contract: a spoiled one must be refused all the same.
      body = serialise({}, c.raw);
    }
    for (const [key, value] of Object.entries(fields)) queryPairs(key, value, pairs);
  }
  if (pairs.length > 0) path += `?${new URLSearchParams(pairs).toString()}`;
  // fetch sends no body with GET or HEAD.
  if (httpMethod === "GET" || httpMethod === "HEAD") body = undefined;
  return { method: httpMethod, path, ...(body !== undefined && { body }) };
}

export function sendRest(
  baseUrl: string,
  route: RestRoute,
  c: FuzzCase,
  auth: Record<string, string>,
): Promise<Exchange> {
  const { method, path, body } = renderRest(route, c);
  return exchange("rest", `${baseUrl}${path}`, {
    method,
    headers: requestHeaders(c, auth, body === undefined ? undefined : "application/json"),
    ...(body !== undefined && { body }),
  });
}

/** A REST server stream: read until the first line (or `windowMs`), then go away. */
export async function sendRestStream(
  baseUrl: string,
  route: RestRoute,
  c: FuzzCase,
  auth: Record<string, string>,
  windowMs: number,
): Promise<Exchange> {
  const { method, path, body } = renderRest(route, c);
  const url = `${baseUrl}${path}`;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("no answer")), answerTimeoutMs);
  try {
    const res = await fetch(url, {
      method,
      headers: requestHeaders(c, auth, body === undefined ? undefined : "application/json"),
      ...(body !== undefined && { body }),
      signal: controller.signal,
    }).catch((error: unknown) => {
      throw new Error(`${method} ${url}: no answer (${describe(error)})`);
    });
    clearTimeout(timer);
    const chunks: Buffer[] = [];
    let ended = false;
    const reader = res.body?.getReader();
    if (reader) {
      const deadline = Date.now() + windowMs;
      while (!chunks.some((chunk) => chunk.includes(10))) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        let wait: NodeJS.Timeout | undefined;
        const next = await Promise.race([
          reader.read(),
          new Promise<"late">((resolve) => {
            wait = setTimeout(() => resolve("late"), left);
          }),
        ]).finally(() => clearTimeout(wait));
        if (next === "late") break;
        if (next.done) {
          ended = true;
          break;
        }
        chunks.push(Buffer.from(next.value));
      }
      if (!ended) await reader.cancel().catch(() => undefined);
    }
    const bytes = Buffer.concat(chunks);
    return {
      transport: "rest-stream",
      httpMethod: method,
      url,
      status: res.status,
      header: (name) => res.headers.get(name),
      text: bytes.toString("utf8"),
      bytes,
      ended,
      serverReset: undefined,
    };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

// --- Connect streams over HTTP/2 -------------------------------------------------------------

function envelope(flags: number, data: string | Buffer): Buffer {
  const payload = Buffer.from(data);
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

function badEnvelope(kind: NonNullable<FuzzCase["stream"]["badEnvelope"]>): Buffer {
  switch (kind) {
    case "compressed-flag":
      return envelope(1, "{}");
    case "end-stream-flag":
      return envelope(2, "{}");
    case "short-length": {
      const frame = envelope(0, "{}");
      frame.writeUInt32BE(100, 1);
      return frame;
    }
    case "oversized": {
      const frame = envelope(0, "{}");
      frame.writeUInt32BE(0xffffffff, 1);
      return frame;
    }
  }
}

/** The complete frames in `bytes` (an incomplete last one is left out). */
export function framesOf(bytes: Buffer): Array<{ flags: number; data: Buffer }> {
  const frames: Array<{ flags: number; data: Buffer }> = [];
  let at = 0;
  while (at + 5 <= bytes.length) {
    const length = bytes.readUInt32BE(at + 1);
    if (at + 5 + length > bytes.length) break;
    frames.push({ flags: bytes[at]!, data: bytes.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return frames;
}

/**
 * Opens a Connect stream with the case's messages, on a new HTTP/2 connection, and reads until
 * the first message or the end of the stream, or for `windowMs` once the response has started;
 * then cancels it. connect-node sends the response headers with the first message: a stream with
 * nothing to say yet (an event subscription) is cancelled after `silentMs` with status 0.
 */
export function sendConnectStream(
  baseUrl: string,
  method: DescMethod,
  c: FuzzCase,
  auth: Record<string, string>,
  windowMs: number,
  silentMs: number,
): Promise<Exchange> {
  const path = procedurePath(method);
  const headers: http2.OutgoingHttpHeaders = {
    ":method": "POST",
    ":path": path,
    ...requestHeaders(c, auth, "application/connect+json"),
  };
  const url = `${baseUrl}${path}`;
  return new Promise<Exchange>((resolve, reject) => {
    // A connection of its own: cancelling hundreds of streams on one connection is what a rapid
    // reset attack looks like, and the server's HTTP/2 layer rightly stops it.
    const session = http2.connect(baseUrl);
    session.on("error", () => undefined);
    const stream = session.request(headers);
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    let ended = false;
    let serverReset: number | undefined;
    let settled = false;
    let window: NodeJS.Timeout | undefined;
    const silent = setTimeout(() => finish(), silentMs);

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(silent);
      clearTimeout(window);
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
      if (error) {
        reject(error);
        return;
      }
      const bytes = Buffer.concat(chunks);
      resolve({
        transport: "connect-stream",
        httpMethod: "POST",
        url,
        status,
        header: (name) => {
          const value = responseHeaders[name.toLowerCase()];
          return value === undefined ? null : Array.isArray(value) ? value.join(", ") : String(value);
        },
        text: bytes.toString("utf8"),
        bytes,
        ended,
        serverReset,
      });
    };
    const enough = () => framesOf(Buffer.concat(chunks)).length > 0;

    stream.on("response", (h) => {
      responseHeaders = h;
      status = Number(h[":status"]);
      clearTimeout(silent);
      window = setTimeout(() => finish(), windowMs);
    });
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (enough()) finish();
    });
    stream.on("end", () => {
      ended = true;
      finish();
    });
    stream.on("close", () => {
      if (!settled && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) serverReset = stream.rstCode;
      finish();
    });
    stream.on("error", () => {
      // Reported through rstCode on close.
    });

    const frames = [envelope(0, serialise(c.request, c.raw))];
    if (method.methodKind === "bidi_streaming") {
      for (const message of c.stream.more) frames.push(envelope(0, JSON.stringify(message)));
    }
    if (c.stream.badEnvelope) frames.push(badEnvelope(c.stream.badEnvelope));
    stream.write(Buffer.concat(frames));
    if (method.methodKind !== "bidi_streaming" || c.stream.endRequest) stream.end();
  });
}

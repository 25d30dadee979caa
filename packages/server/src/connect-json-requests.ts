/**
 * JSON requests that connect-node serves (Connect GET and streams, gRPC and gRPC-Web with `+json`,
 * compressed-free unary calls the lean path leaves to it) are checked against the JSON mapping
 * (json-mapping.ts) before connect-es decodes them, so every path names the offending field alike.
 *
 * connect-es decodes a unary message before any interceptor runs, and answers a decoding failure
 * itself with the decoder's words. So each unary and server-streaming handler is wrapped: the
 * wrapper reads the JSON message first; when it does not fit, the handler gets an empty message
 * (`{}`) instead, and the refusal waits in the call's context values, where the first interceptor
 * ({@link jsonRefusals}) throws it: the answer then takes the protocol's own error form.
 *
 * @module
 */
import type { DescMessage } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  type ContextValues,
  createContextKey,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { PlatformError } from "@wap/core";
import { edgeFromValues } from "./connect-context.js";
import { toConnectError } from "./errors.js";
import { checkJsonRequest } from "./json-mapping.js";
import type { UniversalServerRequest } from "./lean/connect-protocol.js";
import { wrapHandlers } from "./router-handlers.js";

const refusalKey = createContextKey<PlatformError | undefined>(undefined, {
  description: "wap JSON request refusal",
});

/** Throws the refusal the handler wrapper found, before the implementation runs. */
export const jsonRefusals: Interceptor = (next) => (req) => {
  const refusal = req.contextValues.get(refusalKey);
  if (refusal !== undefined) {
    const edge = edgeFromValues(req.contextValues);
    if (edge) edge.code = refusal.code;
    throw toConnectError({
      code: refusal.code,
      message: refusal.message,
      reason: refusal.reason,
      violations: refusal.violations,
      headers: refusal.headers,
    });
  }
  return next(req);
};

/**
 * Wraps every unary and server-streaming handler of `router`: call it at the end of connect-node's
 * `routes` callback, once every route is registered.
 */
export function checkJsonRequestsFirst(router: ConnectRouter, readMaxBytes: number): void {
  wrapHandlers(router, (handler) => {
    const kind = handler.method.methodKind;
    if (kind !== "unary" && kind !== "server_streaming") return undefined;
    const desc = handler.method.input;
    return async (req: UniversalServerRequest) => {
      const contextValues = req.contextValues ?? createContextValues();
      const checked = await checkedRequest(desc, { ...req, contextValues }, contextValues, readMaxBytes);
      return handler(checked);
    };
  });
}

const enveloped = /^application\/(connect|grpc|grpc-web)\+json(;|$)/i;
const unaryJson = /^application\/json(;|$)/i;
const emptyObject = new TextEncoder().encode("{}");
const decoder = new TextDecoder();

/** The request as the handler should see it: as sent, or with `{}` when its JSON was refused. */
async function checkedRequest(
  desc: DescMessage,
  req: UniversalServerRequest,
  values: ContextValues,
  readMaxBytes: number,
): Promise<UniversalServerRequest> {
  const type = req.header.get("content-type") ?? "";
  const encoding = req.header.get("content-encoding");
  const identity = encoding === null || encoding === "identity";

  if (req.method === "GET") {
    const url = new URL(req.url);
    const params = url.searchParams;
    if (params.get("encoding") !== "json" || params.has("compression")) return req;
    const message = params.get("message") ?? "";
    const text = params.get("base64") === "1" ? Buffer.from(message, "base64url").toString("utf8") : message;
    if (!refused(desc, text, values)) return req;
    params.set("message", "{}");
    params.delete("base64");
    return { ...req, url: url.toString() };
  }

  const isUnaryJson = unaryJson.test(type) && identity;
  const isEnveloped = enveloped.test(type);
  if ((!isUnaryJson && !isEnveloped) || !isByteStream(req.body)) return req;
  const read = await readAll(req.body, readMaxBytes + 5);
  // Too large: connect-node refuses it with its own limit error.
  if (!("whole" in read)) return { ...req, body: replay(read.partial, read.rest) };
  const whole = read.whole;
  if (isUnaryJson) {
    return refused(desc, decoder.decode(whole), values)
      ? withBody(req, emptyObject)
      : { ...req, body: once(whole) };
  }
  // One uncompressed envelope: flags 0, a 4-byte length, the message.
  if (whole.byteLength >= 5 && whole[0] === 0) {
    const length = new DataView(whole.buffer, whole.byteOffset, whole.byteLength).getUint32(1);
    if (whole.byteLength === 5 + length && refused(desc, decoder.decode(whole.subarray(5)), values)) {
      const envelope = new Uint8Array(5 + emptyObject.byteLength);
      new DataView(envelope.buffer).setUint32(1, emptyObject.byteLength);
      envelope.set(emptyObject, 5);
      return withBody(req, envelope);
    }
  }
  return { ...req, body: once(whole) };
}

/** The request with another body, its Content-Length told (connect-es checks it). */
function withBody(req: UniversalServerRequest, body: Uint8Array): UniversalServerRequest {
  const header = new Headers(req.header);
  if (header.has("content-length")) header.set("content-length", String(body.byteLength));
  return { ...req, header, body: once(body) };
}

/** Checks one JSON message; a refusal is kept in `values` for {@link jsonRefusals}. */
function refused(desc: DescMessage, text: string, values: ContextValues): boolean {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return false; // Not JSON: the decoder says so.
  }
  try {
    checkJsonRequest(desc, json);
    return false;
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    values.set(refusalKey, error);
    return true;
  }
}

function isByteStream(body: UniversalServerRequest["body"]): body is AsyncIterable<Uint8Array> {
  return typeof body === "object" && body !== null && Symbol.asyncIterator in body;
}

/** The whole body, or what was read of it once it passed `limit` bytes. */
async function readAll(
  body: AsyncIterable<Uint8Array>,
  limit: number,
): Promise<{ whole: Uint8Array } | { partial: Uint8Array[]; rest: AsyncIterator<Uint8Array> }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const next = await it.next();
    if (next.done) break;
    chunks.push(next.value);
    size += next.value.byteLength;
    if (size > limit) return { partial: chunks, rest: it };
  }
  return { whole: chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks, size) };
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** The chunks already read, then the rest of the body. */
async function* replay(read: Uint8Array[], rest: AsyncIterator<Uint8Array>): AsyncIterable<Uint8Array> {
  yield* read;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}

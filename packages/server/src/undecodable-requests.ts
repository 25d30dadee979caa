/**
 * Requests whose message the protocol layer cannot decode are the caller's mistake, yet
 * connect-es answers some of them `internal`: a binary body that is not protobuf ("parse binary:
 * premature EOF"), a Connect GET `message` that is not base64. Here they are answered
 * `invalid_argument`, on Connect, gRPC and gRPC-Web alike:
 *
 * - streams decode their messages as the handler reads them: {@link undecodableRequests} wraps
 *   the messages so the decoder's `internal` becomes `invalid_argument` where it is thrown;
 * - unary calls are decoded before any interceptor runs: the interceptor marks the calls it sees
 *   (decoded ones), and {@link answerUndecodableAsInvalidArgument} rewrites an `internal` answer
 *   to a call it never saw. Faults of decoded calls stay `internal`.
 *
 * @module
 */
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createContextKey,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "./lean/connect-protocol.js";
import { wrapHandlers } from "./router-handlers.js";

const decoded = createContextKey(false, { description: "wap request message decoded" });

const hint = "the request message could not be decoded for its content type";

/** A message the protocol layer could not decode, as the caller's mistake. */
export function undecodable(detail: string | undefined): ConnectError {
  const text = detail === undefined || detail === "" || detail === "internal error" ? "" : `: ${detail}`;
  return new ConnectError(`${hint}${text}`, Code.InvalidArgument);
}

/** Marks decoded unary calls; turns decoding faults of stream messages into `invalid_argument`. */
export const undecodableRequests: Interceptor = (next) => (req) => {
  if (!req.stream) {
    req.contextValues.set(decoded, true);
    return next(req);
  }
  return next({ ...req, message: decodedOrInvalid(req.message) });
};

async function* decodedOrInvalid<T>(messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.Internal) throw undecodable(error.rawMessage);
    throw error;
  }
}

/**
 * Wraps every unary handler of `router`: call it at the end of connect-node's `routes` callback,
 * once every route is registered (the adapter reads `router.handlers` after the callback).
 */
export function answerUndecodableAsInvalidArgument(router: ConnectRouter): void {
  wrapHandlers(router, (handler) => {
    if (handler.method.methodKind !== "unary") return undefined;
    return async (req: Parameters<UniversalHandler>[0]) => {
      // The interceptor marks these very values (without them, connect-es would make its own).
      const contextValues = req.contextValues ?? createContextValues();
      const res = await handler({ ...req, contextValues });
      return contextValues.get(decoded) ? res : rewriteInternal(res);
    };
  });
}

/** An `internal` answer to a call that was never decoded, as `invalid_argument`. */
async function rewriteInternal(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  const type = res.header?.get("content-type") ?? "";
  if (res.status === 500 && type.startsWith("application/json") && res.body) {
    // Connect unary: the error is the whole body.
    const text = Buffer.concat(await collect(res.body)).toString("utf8");
    const error = parseJson(text) as { code?: unknown; message?: unknown } | undefined;
    if (error?.code !== "internal") return { ...res, body: once(Buffer.from(text)) };
    const body = Buffer.from(
      JSON.stringify({
        code: "invalid_argument",
        message: undecodable(String(error.message ?? "")).rawMessage,
      }),
    );
    res.header?.set("content-length", String(body.byteLength));
    return { ...res, status: 400, body: once(body) };
  }
  if (type.startsWith("application/grpc-web")) return { ...res, body: rewriteGrpcWebTrailer(res.body) };
  if (type.startsWith("application/grpc")) return { ...res, body: rewriteGrpcTrailer(res) };
  return res;
}

const grpcInternal = String(Code.Internal);

function setInvalidArgument(trailer: Headers): void {
  const message = decodeURIComponent(trailer.get("grpc-message") ?? "");
  trailer.set("grpc-status", String(Code.InvalidArgument));
  trailer.set("grpc-message", encodeURIComponent(undecodable(message).rawMessage));
}

/** gRPC: the status is in the HTTP trailers, complete once the body is. */
async function* rewriteGrpcTrailer(res: UniversalServerResponse): AsyncIterable<Uint8Array> {
  if (res.body) yield* res.body;
  if (res.trailer?.get("grpc-status") === grpcInternal) setInvalidArgument(res.trailer);
}

/** gRPC-Web: the trailers are the last frame of the body (flag 0x80, uncompressed). */
async function* rewriteGrpcWebTrailer(
  body: AsyncIterable<Uint8Array> | undefined,
): AsyncIterable<Uint8Array> {
  if (!body) return;
  for await (const chunk of body) {
    if (chunk[0] !== 0x80 || chunk.byteLength < 5) {
      yield chunk;
      continue;
    }
    const trailer = new Headers();
    for (const line of Buffer.from(chunk.subarray(5)).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) trailer.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    if (trailer.get("grpc-status") !== grpcInternal) {
      yield chunk;
      continue;
    }
    setInvalidArgument(trailer);
    let text = "";
    trailer.forEach((value, key) => {
      text += `${key}: ${value}\r\n`;
    });
    const data = Buffer.from(text, "latin1");
    const head = Buffer.alloc(5);
    head[0] = 0x80;
    head.writeUInt32BE(data.byteLength, 1);
    yield Buffer.concat([head, data]);
  }
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks;
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

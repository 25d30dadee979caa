/**
 * Unary RPCs as Connect clients usually send them (POST, JSON or binary, nothing compressed, no
 * deadline), served on the Node request with connect-es's own protocol parts: its serializers
 * (the same limits and JSON options), its content-type parser, its compression negotiation, its
 * error body and its status mapping. connect-node's general pipeline (a web Headers copy of every
 * header, an AbortController linked to two others and aborted with a DOMException at the end of
 * every call, the body read through async iterators, the response written through one) costs
 * about as much as the operation it runs; on the request path of certificate issuance it was
 * the largest share of the server's CPU.
 *
 * Everything else goes to connect-node: GET requests, compressed requests, `Connect-Timeout-Ms`,
 * gRPC and gRPC-Web, streaming methods, content types it does not recognise. The two answer
 * alike: server tests send the same calls both ways and compare status, headers and body.
 *
 * @module
 */
import type http from "node:http";
import type http2 from "node:http2";
import type { DescMessage, DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { platformServices } from "@wap/api";
import { genericReason, procedureOf } from "@wap/core/internal";
import { answer } from "../connect-context.js";
import { jsonRefusals } from "../connect-json-requests.js";
import { callPlatform, type EdgeRequest, type EdgeSettings, refusalOf } from "../edge.js";
import { errorCodeOf } from "../errors.js";
import { checkJsonRequestBytes } from "../json-mapping.js";
import { undecodable, undecodableRequests } from "../undecodable-requests.js";
import {
  type Compression,
  codeToHttpStatus,
  compressionNegotiate,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  createMethodSerializationLookup,
  errorToJsonBytes,
  type MethodSerializationLookup,
  parseContentType,
  validateReadWriteMaxBytes,
} from "./connect-protocol.js";
import { createJsonWriters } from "./json-writer.js";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * The connect-node interceptors whose work this path does itself: JSON refusals (`checkJson`)
 * and undecodable requests (`parse`).
 */
export const interceptorsCovered: readonly Interceptor[] = [jsonRefusals, undecodableRequests];
export interface UnaryConnectSettings {
  readonly edge: EdgeSettings;
  /** The largest request message read, as connect-node's `readMaxBytes`. */
  readonly readMaxBytes: number;
  /** As given to connect-node: both paths must parse and write JSON alike. */
  readonly jsonOptions: {
    readonly ignoreUnknownFields: boolean;
    readonly textDecoder?: InstanceType<typeof TextDecoder>;
  };
  /** Aborted when the server starts shutting down, with the error calls in flight answer. */
  readonly shutdown: AbortSignal;
}

/**
 * Serves an admitted request when it is a unary call the lean path takes (and returns true), or
 * does nothing and returns false.
 */
export type UnaryConnectPath = (req: Request, res: Response, edge: EdgeRequest, path: string) => boolean;

interface Route {
  readonly method: DescMethodUnary;
  readonly serialization: MethodSerializationLookup<DescMessage, DescMessage>;
  /** The answer as JSON bytes, written by the compiled writer (json-writer.ts). */
  readonly answerJson: (response: object) => Uint8Array;
}

// connect-node's defaults, so that both paths compress the same answers the same way.
const acceptCompression: Compression[] = [compressionGzip, compressionBrotli];

export function createUnaryConnectPath(settings: UnaryConnectSettings): UnaryConnectPath {
  const limits = validateReadWriteMaxBytes(settings.readMaxBytes, undefined, undefined);
  const routes = new Map<string, Route>();
  const writers = createJsonWriters();
  const encoder = new TextEncoder();
  for (const service of platformServices) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      const unary = method as DescMethodUnary;
      const serialization = createMethodSerializationLookup(unary, undefined, settings.jsonOptions, limits);
      const answerJson = (response: object) => {
        let bytes: Uint8Array | undefined;
        try {
          bytes = encoder.encode(JSON.stringify(writers.toJson(unary.output, response)));
        } catch {
          // Refused (a value toJson cannot write): connect's serializer refuses it as it would.
        }
        return bytes !== undefined && bytes.byteLength <= limits.writeMaxBytes
          ? bytes
          : serialization.getO(false).serialize(response as never);
      };
      routes.set(procedureOf(unary), { method: unary, serialization, answerJson });
    }
  }
  const calls = new CallsInFlight(settings.shutdown);

  return (req, res, edge, path) => {
    const route = routes.get(path);
    const format = route && leanUnaryFormat(req.method, req.headers);
    if (route === undefined || format === undefined) return false;
    const compression = compressionNegotiate(
      acceptCompression,
      null,
      first(req.headers["accept-encoding"]) ?? null,
      "Accept-Encoding",
    );
    serve(req, res, edge, route, format.binary, compression.response, limits, settings, calls).catch(
      (error: unknown) => {
        // Only writing the answer can fail here (a stream gone in between): never the process.
        settings.edge.logger.warn("unary answer could not be written", {
          requestId: edge.requestId,
          error: String(error),
        });
        if (!res.destroyed) res.destroy();
      },
    );
    return true;
  };
}

/**
 * The message format of a unary call the lean path takes, or undefined for a request that goes
 * to connect-node (whatever it is: connect-node answers the unusual and the malformed).
 */
export function leanUnaryFormat(
  method: string | undefined,
  headers: http.IncomingHttpHeaders,
): { readonly binary: boolean } | undefined {
  if (method !== "POST") return undefined;
  const type = parseContentType(first(headers["content-type"]) ?? null);
  const encoding = headers["content-encoding"];
  if (
    type === undefined ||
    type.stream ||
    (encoding !== undefined && encoding !== "identity") ||
    headers["connect-timeout-ms"] !== undefined
  ) {
    return undefined;
  }
  return { binary: type.binary };
}

async function serve(
  req: Request,
  res: Response,
  edge: EdgeRequest,
  route: Route,
  binary: boolean,
  responseCompression: Compression | null,
  limits: { readMaxBytes: number; compressMinBytes: number },
  settings: UnaryConnectSettings,
  calls: CallsInFlight,
): Promise<void> {
  const call = calls.begin(res);
  const head: Record<string, string | string[]> = {
    "content-type": binary ? contentTypeUnaryProto : contentTypeUnaryJson,
  };
  let status = 200;
  let body: Uint8Array;
  try {
    // A refusal known from the headers (rate limit, CSRF, credentials) is answered before any
    // body is read; on HTTP/1.1 the connection then closes rather than wait for the rest.
    const refused = refusalOf(edge, settings.edge, route.method);
    if (refused !== undefined) {
      if (req.httpVersionMajor === 1 && !req.complete) head.connection = "close";
      throw answer(edge, settings.edge, refused);
    }
    const bytes = await readBody(req, limits.readMaxBytes);
    if (!binary) checkJson(edge, settings.edge, route.method.input, bytes);
    const request = parse(route, binary, bytes);
    let result: Awaited<ReturnType<typeof callPlatform>>;
    try {
      result = await callPlatform(edge, settings.edge, route.method, request, call.signal);
    } catch (error) {
      // Whatever the call ends with, as the connect-node handler answers it (connect-routes.ts).
      throw answer(edge, settings.edge, error);
    }
    if (result.setCookies !== undefined) head["set-cookie"] = [...result.setCookies];
    edge.code = "ok";
    body = binary
      ? route.serialization.getO(true).serialize(result.response)
      : route.answerJson(result.response);
  } catch (error) {
    // The call's answer, or a refusal of the protocol layer (size, framing, decoding).
    const connectError =
      error instanceof ConnectError
        ? error
        : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
    edge.code = errorCodeOf(connectError.code);
    edge.reason ??= genericReason(edge.code);
    status = codeToHttpStatus(connectError.code);
    head["content-type"] = contentTypeUnaryJson;
    connectError.metadata.forEach((value, key) => {
      head[key] = value;
    });
    body = errorToJsonBytes(connectError, {});
  } finally {
    calls.end(call);
  }
  if (res.destroyed) return;
  if (responseCompression !== null && body.byteLength >= limits.compressMinBytes) {
    body = await responseCompression.compress(body);
    head["content-encoding"] = responseCompression.name;
  }
  head["content-length"] = String(body.byteLength);
  (res as http.ServerResponse).writeHead(status, head);
  res.end(body);
}

/** A JSON request checked against the JSON mapping (json-mapping.ts), answered as any refusal. */
function checkJson(edge: EdgeRequest, settings: EdgeSettings, desc: DescMessage, bytes: Uint8Array): void {
  try {
    checkJsonRequestBytes(desc, bytes);
  } catch (error) {
    throw answer(edge, settings, error);
  }
}

/** The request message, with connect-node's codes for what cannot be decoded (see undecodable-requests.ts). */
function parse(route: Route, binary: boolean, bytes: Uint8Array) {
  try {
    return route.serialization.getI(binary).parse(bytes);
  } catch (error) {
    const connectError = ConnectError.from(error, Code.InvalidArgument);
    throw connectError.code === Code.Internal ? undecodable(connectError.rawMessage) : connectError;
  }
}

/**
 * The whole request body, at most `maxBytes` (connect-es's messages and codes for a body that is
 * too large or shorter or longer than its Content-Length).
 */
function readBody(req: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = declaredLength(first(req.headers["content-length"]));
  if (declared !== undefined && declared > maxBytes) return Promise.reject(tooLarge(maxBytes, declared));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("aborted", onGone);
      req.off("close", onGone);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes || (declared !== undefined && size > declared)) {
        stop();
        req.pause();
        reject(declared === undefined ? tooLarge(maxBytes) : notAsPromised(declared, size));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      if (declared !== undefined && size < declared) reject(notAsPromised(declared, size));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onGone = () => {
      stop();
      reject(new ConnectError("the client left before its request was read", Code.Canceled));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("aborted", onGone);
    // A stream destroyed without a reset (the connection lost) closes without ending.
    req.on("close", onGone);
  });
}

function declaredLength(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/** The size is named when the request declared it. */
function tooLarge(maxBytes: number, declared?: number): ConnectError {
  const size = declared === undefined ? "" : ` ${declared}`;
  return new ConnectError(
    `message size${size} is larger than configured readMaxBytes ${maxBytes}`,
    Code.ResourceExhausted,
  );
}

function notAsPromised(declared: number, received: number): ConnectError {
  return new ConnectError(
    `protocol error: promised ${declared} bytes, received ${received}`,
    Code.InvalidArgument,
  );
}

/**
 * The abort signal of each call in flight: aborted when its client leaves, or for all of them
 * when the server starts shutting down. One listener on the shutdown signal for all calls, and
 * nothing aborted (no DOMException made) when a call simply ends.
 */
class CallsInFlight {
  readonly #controllers = new Set<AbortController>();
  readonly #shutdown: AbortSignal;

  constructor(shutdown: AbortSignal) {
    this.#shutdown = shutdown;
    shutdown.addEventListener(
      "abort",
      () => {
        for (const controller of this.#controllers) controller.abort(shutdown.reason);
      },
      { once: true },
    );
  }

  begin(res: Response): AbortController {
    const controller = new AbortController();
    if (this.#shutdown.aborted) {
      controller.abort(this.#shutdown.reason);
      return controller;
    }
    this.#controllers.add(controller);
    // The response closing before it was ended: the client reset the stream or left.
    res.once("close", () => {
      if (!res.writableEnded && this.#controllers.has(controller)) controller.abort(clientLeft);
    });
    return controller;
  }

  end(controller: AbortController): void {
    this.#controllers.delete(controller);
  }
}

const clientLeft = new ConnectError("the client left", Code.Canceled);

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * gRPC-Web in text mode (`application/grpc-web-text`, the default of the grpc-web JavaScript
 * client): the frames of binary gRPC-Web, base64-encoded both ways. connect-node speaks only the
 * binary form, so a text request is turned into a binary one on arrival (its content type and its
 * body) and every answer to it back into text on the way out (its content type and each chunk
 * written). Everything in between (the edge, refusals, connect-node, unknown procedures) serves
 * the one gRPC-Web.
 *
 * Each chunk of the answer is encoded on its own, padding included: a message reaches the client
 * whole as soon as it is written, as the gRPC-Web protocol asks of servers (its clients decode
 * base64 in 4-character groups, so padding inside the body is expected).
 *
 * @module
 */
import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

const textType = /^application\/grpc-web-text(\+proto)?\s*(;|$)/i;
/** What the answers of connect-node and the edge say for a binary gRPC-Web request. */
const binaryType = /^application\/grpc-web(\+proto)?\s*(;|$)/i;
const binaryRequestType = "application/grpc-web+proto";
const textAnswerType = "application/grpc-web-text+proto";

/** Whether a request's content type is gRPC-Web text. */
export function isGrpcWebText(contentType: string | undefined): boolean {
  return contentType !== undefined && textType.test(contentType);
}

/**
 * Makes `req` read as binary gRPC-Web (its content type and decoded body) and `res` answer in
 * text: a binary gRPC-Web answer's content type becomes `application/grpc-web-text+proto` and its
 * body base64. Any other answer (an HTTP-level refusal) is left as it is.
 */
export function serveAsGrpcWebBinary(req: Request, res: Response): void {
  req.headers["content-type"] = binaryRequestType;
  const raw = req[Symbol.asyncIterator].bind(req) as () => AsyncIterator<Buffer | string>;
  req[Symbol.asyncIterator] = () => decodeBase64(raw())[Symbol.asyncIterator]();
  encodeAnswers(res);
}

/** The bytes of a base64 body read in chunks, which may split its 4-character groups anywhere. */
export async function* decodeBase64(chunks: AsyncIterator<Buffer | string>): AsyncGenerator<Buffer> {
  let pending = "";
  for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) {
    pending += (typeof next.value === "string" ? next.value : next.value.toString("latin1")).replace(
      /[\t\n\r ]/g,
      "",
    );
    const whole = pending.length - (pending.length % 4);
    if (whole === 0) continue;
    yield decodeGroups(pending.slice(0, whole));
    pending = pending.slice(whole);
  }
  if (pending.length > 0) throw notBase64();
}

const base64Groups = /^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)*$/;

/** Whole 4-character groups, any of which may end in padding (chunks encoded one by one). */
function decodeGroups(text: string): Buffer {
  if (!base64Groups.test(text)) throw notBase64();
  // Node's decoder stops at the first padding: decode up to each padded group separately.
  const parts: Buffer[] = [];
  let from = 0;
  for (let group = 0; group < text.length; group += 4) {
    if (text[group + 3] !== "=") continue;
    parts.push(Buffer.from(text.slice(from, group + 4), "base64"));
    from = group + 4;
  }
  if (from < text.length) parts.push(Buffer.from(text.slice(from), "base64"));
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

function notBase64(): ConnectError {
  return new ConnectError(
    "the request body is not base64 in 4-character groups, as application/grpc-web-text must be",
    Code.InvalidArgument,
  );
}

/** Base64 for every chunk written after a gRPC-Web header block; that block's content type in text. */
function encodeAnswers(res: Response): void {
  let encode = false;
  const asText = (headers: Record<string, unknown>) => {
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() !== "content-type") continue;
      const value = headers[name];
      if (typeof value !== "string" || !binaryType.test(value)) continue;
      headers[name] = textAnswerType;
      encode = true;
    }
    if (encode) {
      for (const name of Object.keys(headers))
        if (name.toLowerCase() === "content-length") delete headers[name];
    }
  };
  if ("stream" in res) {
    // Every HTTP/2 header block passes here, also those sent on the stream directly.
    const stream = res.stream;
    const respond = stream.respond.bind(stream);
    stream.respond = (headers, options) => {
      if (headers !== undefined) asText(headers as Record<string, unknown>);
      respond(headers, options);
    };
  } else {
    // Every HTTP/1.1 header block passes here: the implicit one on a first write calls it too.
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => http.ServerResponse;
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const stored = res.getHeaders() as Record<string, unknown>;
      const given = rest.at(-1);
      const headers = given !== null && typeof given === "object" && !Array.isArray(given) ? given : {};
      asText(stored);
      asText(headers as Record<string, unknown>);
      if (encode) {
        res.removeHeader("content-length");
        res.setHeader("content-type", textAnswerType);
      }
      return writeHead(status, ...rest);
    }) as typeof res.writeHead;
  }
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const beforeBody = () => {
    // The header block decides whether the body is encoded: send it first.
    if (!res.headersSent) (res.writeHead as (status: number) => unknown)(res.statusCode);
  };
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    beforeBody();
    return encode
      ? write(base64Of(chunk, rest[0]), "latin1", ...rest.filter(isFunction))
      : write(chunk, ...rest);
  }) as typeof res.write;
  res.end = ((...args: unknown[]) => {
    const [chunk, ...rest] = args;
    if (chunk === undefined || chunk === null || isFunction(chunk)) return end(...args);
    beforeBody();
    return encode ? end(base64Of(chunk, rest[0]), "latin1", ...rest.filter(isFunction)) : end(...args);
  }) as typeof res.end;
}

function base64Of(chunk: unknown, encoding: unknown): string {
  if (typeof chunk === "string")
    return Buffer.from(chunk, (encoding as BufferEncoding | undefined) ?? "utf8").toString("base64");
  const bytes = chunk as Uint8Array;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

function isFunction(value: unknown): value is (...args: unknown[]) => unknown {
  return typeof value === "function";
}

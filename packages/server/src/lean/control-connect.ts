/**
 * DaemonControlService.Connect as the agent opens it (Connect protocol, binary, HTTP/2, nothing
 * compressed, no deadline), served on the HTTP/2 stream with connect-es's own protocol parts:
 * its envelope splitter and encoder and its end-of-stream message. Thousands of daemons stay
 * connected for days, and the general handler pipeline (a dozen async generators and tens of
 * kilobytes per stream) held for each of them costs a server more memory than it has to spare,
 * and its garbage collector the pauses that follow. Every other request for this RPC (gRPC,
 * gRPC-Web, Connect JSON, compression, `Connect-Timeout-Ms`) goes through connect-node; both
 * carry the same stream, the one the platform runs ({@link controlStream}).
 *
 * @module
 */
import { once } from "node:events";
import type http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type ConnectRequest, ConnectRequestSchema, ConnectResponseSchema } from "@wap/api";
import { type ConnectResponseInit, heartbeatAck } from "@wap/core/internal";
import { answer } from "../connect-context.js";
import { controlStream, endedByLeaving } from "../daemons/control-stream.js";
import type { EdgeRequest, EdgeSettings } from "../edge.js";
import { describeFault } from "../errors.js";
import {
  compressedFlag,
  encodeEnvelope,
  endStreamFlag,
  endStreamToJson,
  transformSplitEnvelope,
} from "./connect-protocol.js";

/** The path of DaemonControlService.Connect. */
export const controlStreamPath = "/platform.v1.DaemonControlService/Connect";
const contentType = "application/connect+proto";
/** Largest client message read; a Heartbeat is two bytes (an old client's retired `sync`, a few hundred). */
const maxRequestBytes = 64 * 1024;

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Whether this request is one the lean path serves; the others go to connect-node. */
function servedLean(req: Request): boolean {
  const headers = req.headers;
  const encoding = headers["connect-content-encoding"];
  return (
    req.httpVersionMajor === 2 &&
    req.method === "POST" &&
    headers["content-type"] === contentType &&
    (encoding === undefined || encoding === "identity") &&
    headers["connect-timeout-ms"] === undefined
  );
}

/**
 * Serves the control stream of an admitted request when it is one the lean path takes; returns
 * false (and does nothing) otherwise.
 */
export function serveControlStream(
  req: Request,
  res: Response,
  edge: EdgeRequest,
  settings: EdgeSettings,
): boolean {
  if (!servedLean(req)) return false;
  serve(req, res, edge, settings).catch((error: unknown) => failed(res, edge, settings, error));
  return true;
}

/**
 * The stream could not even be answered (writing its end failed, or a bug): logged with the
 * request id, and the HTTP/2 stream reset, so the daemon sees it end and reconnects.
 */
function failed(res: Response, edge: EdgeRequest, settings: EdgeSettings, error: unknown): void {
  edge.code = "internal";
  settings.logger.error("control stream failed", { requestId: edge.requestId, error: describeFault(error) });
  const stream = (res as http2.Http2ServerResponse).stream;
  if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
}

async function serve(req: Request, res: Response, edge: EdgeRequest, settings: EdgeSettings): Promise<void> {
  const clientGone = new AbortController();
  // The response closing before it was ended: the client reset the stream or dropped the connection.
  res.once("close", () => {
    if (!res.writableEnded) clientGone.abort();
  });
  const writer = new MessageWriter(res, clientGone.signal);
  try {
    for await (const message of await controlStream(settings, edge, clientGone.signal, requestsOf(req))) {
      await writer.message(message);
    }
    // The stream returns only once its client has gone: the normal end of a control stream.
    edge.code = "ok";
  } catch (error) {
    if (clientGone.signal.aborted) {
      endedByLeaving(edge, settings, error);
      return;
    }
    await writer.end(answer(edge, settings, error));
  }
}

/** Writes enveloped messages, sending the response headers with the first. */
class MessageWriter {
  readonly #res: Response;
  readonly #clientGone: AbortSignal;

  constructor(res: Response, clientGone: AbortSignal) {
    this.#res = res;
    this.#clientGone = clientGone;
  }

  async message(message: ConnectResponseInit): Promise<void> {
    const bytes =
      message === heartbeatAck
        ? heartbeatAckBytes
        : toBinary(ConnectResponseSchema, create(ConnectResponseSchema, message));
    await this.#write(encodeEnvelope(0, bytes));
  }

  /** The end-of-stream message with the error, then the end of the response. */
  async end(error: ConnectError): Promise<void> {
    const json = endStreamToJson(error.metadata, error, undefined);
    await this.#write(encodeEnvelope(endStreamFlag, new TextEncoder().encode(JSON.stringify(json))));
    const stream = (this.#res as http2.Http2ServerResponse).stream;
    this.#res.end(() => {
      // The client may still be sending: ask it to stop (RFC 9113 §8.1) rather than leave the
      // stream half open for as long as it cares to.
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    });
  }

  async #write(envelope: Uint8Array): Promise<void> {
    if (!this.#res.headersSent) {
      (this.#res as http.ServerResponse).writeHead(200, { "content-type": contentType });
    }
    // A daemon that does not read: wait, while the stream's own queue bounds what piles up.
    if (!(this.#res as http.ServerResponse).write(envelope) && !this.#clientGone.aborted) {
      await once(this.#res, "drain", { signal: this.#clientGone }).catch(() => undefined);
    }
  }
}

const heartbeatAckBytes = toBinary(ConnectResponseSchema, create(ConnectResponseSchema, heartbeatAck));

/** The client's messages, from the request body's envelopes. */
async function* requestsOf(req: Request): AsyncGenerator<ConnectRequest> {
  const envelopes = transformSplitEnvelope(maxRequestBytes)(req as AsyncIterable<Uint8Array>);
  for await (const { flags, data } of envelopes) {
    if (flags & compressedFlag) {
      throw new ConnectError("compressed message without Connect-Content-Encoding", Code.InvalidArgument);
    }
    try {
      yield fromBinary(ConnectRequestSchema, data);
    } catch (cause) {
      throw new ConnectError(
        "the message is not a ConnectRequest",
        Code.InvalidArgument,
        undefined,
        undefined,
        cause,
      );
    }
  }
}

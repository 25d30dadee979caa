/**
 * A call to a procedure this server does not have (`/pkg.Service/Method`), answered in the
 * protocol the client speaks: `unimplemented` as a gRPC or gRPC-Web status (HTTP 200, trailers
 * only, the client's content type), or as a Connect error (HTTP 404 with the Connect error body).
 * Requests that are none of these, and every path that is not a procedure's (REST), go on to the
 * REST app.
 *
 * @module
 */
import type http from "node:http";
import type http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import type { EdgeRequest } from "./edge.js";
import { isProcedurePath } from "./procedure-path.js";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Answers the request when it is an RPC to an unknown procedure (and returns true). */
export function answerUnknownProcedure(
  req: Request,
  res: Response,
  path: string,
  edge: EdgeRequest | undefined,
): boolean {
  // REST paths never have a dotted first segment: whatever their content type, the REST app answers.
  if (!isProcedurePath(path)) return false;
  const type = String(req.headers["content-type"] ?? "").toLowerCase();
  const message = `${path.slice(1)} is not a procedure of this server`;
  if (type.startsWith("application/grpc")) {
    // gRPC and gRPC-Web (any subtype): trailers-only, the status in the headers.
    if (edge) edge.code = "unimplemented";
    const head = {
      "content-type": type.split(";")[0] ?? type,
      "grpc-status": String(Code.Unimplemented),
      "grpc-message": encodeURIComponent(message),
    };
    afterRequestBody(req, () => {
      if ("stream" in res) {
        // One HEADERS frame that ends the stream, as gRPC clients expect a trailers-only answer.
        if (!res.stream.destroyed && !res.stream.headersSent)
          res.stream.respond({ ":status": 200, ...head }, { endStream: true });
      } else if (!res.headersSent) {
        (res as http.ServerResponse).writeHead(200, head);
        res.end();
      }
    });
    return true;
  }
  const connect =
    type.startsWith("application/connect+") ||
    req.headers["connect-protocol-version"] !== undefined ||
    /^application\/(json|proto)(;|$)/.test(type) ||
    (req.method === "GET" && /[?&]connect=v1(&|$)/.test(req.url ?? ""));
  if (!connect) return false;
  if (edge) edge.code = "unimplemented";
  const body = JSON.stringify({ code: "unimplemented", message });
  (res as http.ServerResponse).writeHead(404, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
  return true;
}

/** How much of an unknown procedure's request is read before it is answered anyway. */
const drainLimit = { bytes: 64 * 1024, ms: 1000 };

/**
 * Runs `answer` once the client has finished sending (or after a bounded wait). An HTTP/2 answer
 * that ends the stream while the client is still uploading makes the server reset the stream,
 * which some clients (curl) report as a framing error instead of the status; what arrives later
 * is read and dropped.
 */
function afterRequestBody(req: Request, answer: () => void): void {
  let received = 0;
  let answered = false;
  const finish = () => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    answer();
  };
  const timer = setTimeout(finish, drainLimit.ms);
  req.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received > drainLimit.bytes) finish();
  });
  req.once("end", finish);
  req.once("error", finish);
  req.once("close", finish);
}

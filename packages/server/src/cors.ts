/**
 * CORS for the origins the operator allows (`WAP_ALLOWED_ORIGINS`): a web app served from
 * another origin may call the API with the session cookie. Other origins get no CORS headers, so
 * browsers keep their pages from reading answers or sending preflighted requests.
 *
 * @module
 */
import { cors as connectCors } from "@connectrpc/connect";
import type { NodeRequestLike, NodeResponseLike } from "./edge.js";

const allowMethods = ["GET", "POST", "PATCH", "DELETE"].join(", ");
const allowHeaders = [...connectCors.allowedHeaders, "Authorization", "X-Request-Id"].join(", ");
const exposeHeaders = [
  ...connectCors.exposedHeaders,
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Retry-After",
].join(", ");
const preflightMaxAgeSeconds = "7200";

/**
 * Adds the CORS headers an allowed origin needs. Returns true when the request was a preflight,
 * which it has answered.
 */
export function applyCors(
  req: NodeRequestLike,
  res: NodeResponseLike & { writeHead(status: number): unknown; end(): unknown },
  allowedOrigins: ReadonlySet<string>,
): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || !allowedOrigins.has(origin.toLowerCase())) return false;
  res.setHeader("Access-Control-Allow-Origin", origin);
  res.setHeader("Access-Control-Allow-Credentials", "true");
  res.setHeader("Vary", "Origin");
  if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
    res.setHeader("Access-Control-Allow-Methods", allowMethods);
    res.setHeader("Access-Control-Allow-Headers", allowHeaders);
    res.setHeader("Access-Control-Max-Age", preflightMaxAgeSeconds);
    res.writeHead(204);
    res.end();
    return true;
  }
  res.setHeader("Access-Control-Expose-Headers", exposeHeaders);
  return false;
}

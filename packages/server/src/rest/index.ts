/**
 * REST transcoding of the `google.api.http` annotations: route a request to its RPC, build the
 * request message from path, query and body, and write the response or error.
 *
 * @module
 */

export type { RestErrorBody, RestErrorDetail } from "./errors.js";
export { httpStatusOf, restErrorBody, rpcCodeOf } from "./errors.js";
export type { RestRequestInput } from "./request.js";
export { buildRequest, parseJsonBody } from "./request.js";
export { writeResponse } from "./response.js";
export type { RestMatch, RestRoute, RestRoutes } from "./routes.js";
export { createRestRoutes } from "./routes.js";

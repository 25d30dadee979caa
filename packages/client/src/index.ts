/**
 * @wap/client: a typed SDK for the Workspace Access Platform over Connect (or gRPC), with
 * sign-in, automatic token refresh and pagination helpers.
 *
 * @module
 */
export { createPlatformClient } from "./client.js";
export type { PlatformClient, PlatformClientOptions } from "./client.js";
export { createServiceClients } from "./clients.js";
export type { ServiceClients } from "./clients.js";
export { createAuthInterceptor, createMemoryTokenStore } from "./session.js";
export type { TokenStore, Tokens } from "./session.js";
export { paginate } from "./paginate.js";
export { Code, ConnectError } from "@connectrpc/connect";

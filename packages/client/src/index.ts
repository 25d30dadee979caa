/**
 * @wap/client: a typed SDK for the Workspace Access Platform over Connect (or gRPC), with
 * sign-in, automatic token refresh, request signing for daemons and CLI devices, and pagination
 * helpers.
 *
 * @module
 */

export { Code, ConnectError } from "@connectrpc/connect";
export type { PlatformClient, PlatformClientOptions } from "./client.js";
export { createPlatformClient } from "./client.js";
export type { ServiceClients } from "./clients.js";
export { createServiceClients } from "./clients.js";
export { paginate } from "./paginate.js";
export type { TokenStore, Tokens } from "./session.js";
export { createAuthInterceptor, createMemoryTokenStore } from "./session.js";
export type {
  DaemonClient,
  DaemonClientOptions,
  PlatformSigner,
  PlatformSignerOptions,
} from "./signed-requests.js";
export { createDaemonClient, createPlatformSigner, signChallenge } from "./signed-requests.js";

/**
 * @wap/client: a typed SDK for the Workspace Access Platform over Connect (or gRPC), with
 * sign-in, automatic token refresh, request signing for daemons and CLI devices, and pagination
 * helpers.
 *
 * This is the Node entry. Browsers (and bundlers targeting them) get `index.browser.ts` through
 * the `browser` export condition: the same API without request signing, over `fetch`.
 *
 * @module
 */

export { Code, ConnectError } from "@connectrpc/connect";
export type { PlatformClientOptions } from "./client.js";
export { createPlatformClient } from "./client.js";
export type { ServiceClients } from "./clients.js";
export { createServiceClients } from "./clients.js";
export { paginate } from "./paginate.js";
export type { BaseClientOptions, PlatformClient } from "./platform-client.js";
export type { TokenStore, Tokens } from "./session.js";
export { createAuthInterceptor, createMemoryTokenStore } from "./session.js";
export type { DaemonClient } from "./signed-requests.js";
export { createDaemonClient } from "./signed-requests.js";
export type {
  DaemonClientOptions,
  DaemonTransport,
  PlatformSigner,
  PlatformSignerOptions,
} from "./signed-transport.js";
export { createDaemonTransport, createPlatformSigner, signChallenge } from "./signed-transport.js";

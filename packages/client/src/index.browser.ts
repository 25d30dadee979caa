/**
 * @wap/client in browsers: the typed SDK over `fetch` (connect-web), with sign-in, automatic
 * token refresh and pagination helpers. Request signing for daemons and CLI devices needs
 * node:crypto and lives only in the Node entry.
 *
 * @module
 */

export { Code, ConnectError } from "@connectrpc/connect";
export type { BrowserClientOptions } from "./browser-client.js";
export { createPlatformClient } from "./browser-client.js";
export type { ServiceClients } from "./clients.js";
export { createServiceClients } from "./clients.js";
export { paginate } from "./paginate.js";
export type { BaseClientOptions, PlatformClient } from "./platform-client.js";
export type { TokenStore, Tokens } from "./session.js";
export { createAuthInterceptor, createMemoryTokenStore } from "./session.js";

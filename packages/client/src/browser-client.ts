import { createConnectTransport } from "@connectrpc/connect-web";
import { type BaseClientOptions, buildPlatformClient, type PlatformClient } from "./platform-client.js";

/** How to reach a platform server from a browser. */
export interface BrowserClientOptions extends BaseClientOptions {
  /**
   * Whether the browser sends its cookies (the platform's session cookie) with each call:
   * `same-origin` by default, `include` for a console served from another origin.
   */
  readonly credentials?: "omit" | "same-origin" | "include";
}

/**
 * Creates a client of a platform server in a browser, over `fetch` (Connect protocol; server
 * streams work over HTTP/1.1 and HTTP/2 alike).
 */
export function createPlatformClient(options: BrowserClientOptions): PlatformClient {
  return buildPlatformClient(options, (interceptors) =>
    createConnectTransport({
      baseUrl: options.baseUrl,
      useBinaryFormat: options.binary ?? true,
      fetch: (input, init) =>
        globalThis.fetch(input, { ...init, credentials: options.credentials ?? "same-origin" }),
      interceptors,
    }),
  );
}

import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { type BaseClientOptions, buildPlatformClient, type PlatformClient } from "./platform-client.js";

/** How to reach a platform server from Node. */
export interface PlatformClientOptions extends BaseClientOptions {
  /** `connect` (default) or `grpc`. Both need HTTP/2 for streams. */
  readonly protocol?: "connect" | "grpc";
  /** HTTP version for the Connect protocol. Default "2" (h2c for http:// URLs). */
  readonly httpVersion?: "1.1" | "2";
}

/**
 * Creates a client of a platform server, for Node (HTTP/2 by default, so server streams work).
 *
 * @example
 * ```ts
 * const client = createPlatformClient({ baseUrl: "http://127.0.0.1:8080" });
 * await client.login("ada@example.com", "correct horse battery staple");
 * const { workspaces } = await client.workspaces.listWorkspaces({});
 * ```
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  return buildPlatformClient(options, (interceptors) =>
    options.protocol === "grpc"
      ? createGrpcTransport({ baseUrl: options.baseUrl, interceptors })
      : createConnectTransport({
          baseUrl: options.baseUrl,
          httpVersion: options.httpVersion ?? "2",
          useBinaryFormat: options.binary ?? true,
          interceptors,
        }),
  );
}

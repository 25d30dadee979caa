import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { createServiceClients, type ServiceClients } from "./clients.js";
import { createAuthInterceptor, createMemoryTokenStore, type TokenStore, type Tokens } from "./session.js";

/** How to reach a platform server. */
export interface PlatformClientOptions {
  /** e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  /** A service-account token or an access token to start with. */
  readonly token?: string;
  /** Where tokens live; memory by default. */
  readonly tokenStore?: TokenStore;
  /** `connect` (default) or `grpc`. Both need HTTP/2 for streams. */
  readonly protocol?: "connect" | "grpc";
  /** Binary protobuf instead of JSON (Connect only). Default true: smaller and faster. */
  readonly binary?: boolean;
  /** HTTP version for the Connect protocol. Default "2" (h2c for http:// URLs). */
  readonly httpVersion?: "1.1" | "2";
  readonly interceptors?: readonly Interceptor[];
}

/** A typed client of every platform service, with sign-in helpers. */
export interface PlatformClient extends ServiceClients {
  readonly transport: Transport;
  readonly tokens: TokenStore;
  /** Signs in with email and password; later calls carry the access token and refresh it when it expires. */
  login(email: string, password: string): Promise<Tokens>;
  /** Ends the session on the server and forgets the tokens. */
  logout(): Promise<void>;
}

/**
 * Creates a client of a platform server.
 *
 * @example
 * ```ts
 * const client = createPlatformClient({ baseUrl: "http://127.0.0.1:8080" });
 * await client.login("ada@example.com", "correct horse battery staple");
 * const { workspaces } = await client.workspaces.listWorkspaces({});
 * ```
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const tokens =
    options.tokenStore ?? createMemoryTokenStore(options.token ? { accessToken: options.token } : undefined);
  // A client without the auth interceptor, for the refresh call itself.
  const bare = createServiceClients(makeTransport(options, [...(options.interceptors ?? [])]));
  const refresh = async (refreshToken: string): Promise<Tokens> => {
    const res = await bare.auth.refreshToken({ refreshToken });
    return { accessToken: res.accessToken, refreshToken: res.refreshToken || refreshToken };
  };
  const transport = makeTransport(options, [
    createAuthInterceptor(tokens, refresh),
    ...(options.interceptors ?? []),
  ]);
  const clients = createServiceClients(transport);
  return {
    ...clients,
    transport,
    tokens,
    async login(email, password) {
      const res = await bare.auth.login({ email, password });
      const issued = { accessToken: res.accessToken, refreshToken: res.refreshToken };
      tokens.set(issued);
      return issued;
    },
    async logout() {
      try {
        if (tokens.get()) await clients.auth.logout({});
      } finally {
        tokens.set(undefined);
      }
    },
  };
}

function makeTransport(options: PlatformClientOptions, interceptors: Interceptor[]): Transport {
  if (options.protocol === "grpc") {
    return createGrpcTransport({ baseUrl: options.baseUrl, interceptors });
  }
  return createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: options.httpVersion ?? "2",
    useBinaryFormat: options.binary ?? true,
    interceptors,
  });
}

import type { Interceptor, Transport } from "@connectrpc/connect";
import { createServiceClients, type ServiceClients } from "./clients.js";
import { createAuthInterceptor, createMemoryTokenStore, type TokenStore, type Tokens } from "./session.js";

/** What every platform client takes, in Node and in browsers. */
export interface BaseClientOptions {
  /** e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string;
  /** A service-account token or an access token to start with. */
  readonly token?: string;
  /** Where tokens live; memory by default. */
  readonly tokenStore?: TokenStore;
  /** Binary protobuf instead of JSON (Connect only). Default true: smaller and faster. */
  readonly binary?: boolean;
  readonly interceptors?: readonly Interceptor[];
}

/** Builds the transport of one environment (Node or browser) with the given interceptors. */
export type TransportFactory = (interceptors: Interceptor[]) => Transport;

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
 * The environment-independent part of `createPlatformClient`: token handling, refresh and the
 * service clients, over transports made by `makeTransport`.
 */
export function buildPlatformClient(
  options: BaseClientOptions,
  makeTransport: TransportFactory,
): PlatformClient {
  const tokens =
    options.tokenStore ?? createMemoryTokenStore(options.token ? { accessToken: options.token } : undefined);
  // A client without the auth interceptor, for the refresh call itself.
  const bare = createServiceClients(makeTransport([...(options.interceptors ?? [])]));
  const refresh = async (refreshToken: string): Promise<Tokens> => {
    const res = await bare.auth.refreshToken({ refreshToken });
    return { accessToken: res.accessToken, refreshToken: res.refreshToken || refreshToken };
  };
  const transport = makeTransport([createAuthInterceptor(tokens, refresh), ...(options.interceptors ?? [])]);
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

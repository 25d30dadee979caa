import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** The credentials a client holds. */
export interface Tokens {
  readonly accessToken: string;
  /** Absent for service-account tokens, which do not expire by refresh. */
  readonly refreshToken?: string;
}

/** Where a client keeps its tokens between calls (memory by default; a file or keychain in a CLI). */
export interface TokenStore {
  get(): Tokens | undefined;
  set(tokens: Tokens | undefined): void;
}

/** Keeps tokens in memory for the life of the process. */
export function createMemoryTokenStore(initial?: Tokens): TokenStore {
  let tokens = initial;
  return {
    get: () => tokens,
    set: (next) => {
      tokens = next;
    },
  };
}

/**
 * Adds `Authorization: Bearer` to every call, and when a call fails `unauthenticated` while a
 * refresh token is held, refreshes once (single-flight: concurrent failures share one refresh)
 * and retries the call with the new access token.
 */
export function createAuthInterceptor(
  store: TokenStore,
  refresh: (refreshToken: string) => Promise<Tokens>,
): Interceptor {
  let inFlight: Promise<Tokens> | undefined;
  const refreshOnce = (refreshToken: string) => {
    inFlight ??= refresh(refreshToken).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  return (next) => async (request) => {
    const held = store.get();
    if (held && !request.header.has("Authorization")) {
      request.header.set("Authorization", `Bearer ${held.accessToken}`);
    }
    try {
      return await next(request);
    } catch (error) {
      const refreshToken = held?.refreshToken;
      const expired = error instanceof ConnectError && error.code === Code.Unauthenticated;
      if (!expired || !refreshToken || request.stream || isRefreshCall(request.url)) throw error;
      let renewed: Tokens;
      try {
        renewed = await refreshOnce(refreshToken);
      } catch (refreshError) {
        store.set(undefined);
        throw refreshError;
      }
      store.set(renewed);
      request.header.set("Authorization", `Bearer ${renewed.accessToken}`);
      return next(request);
    }
  };
}

function isRefreshCall(url: string): boolean {
  return url.endsWith("/platform.v1.AuthService/RefreshToken");
}

/**
 * The console's connection to the server it is served by: Connect over fetch with the session
 * cookie (never a token in script). When the 15-minute access token has lapsed, one call to
 * RefreshToken with an empty body spends the HttpOnly refresh cookie and the call is retried.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { createServiceClients } from "@wap/client";

const baseUrl = window.location.origin;

/** Calls the server would refuse with the cookie gone: no point refreshing for them. */
const noRefresh = new Set(["RefreshToken", "Login", "LoginWithBackupCode", "FinishPasskeyLogin", "Logout"]);

let refreshing: Promise<boolean> | undefined;

/** Spends the refresh cookie once for every call that found the access token lapsed. */
export function refreshSession(): Promise<boolean> {
  refreshing ??= auth
    .refreshToken({})
    .then(
      () => true,
      () => false,
    )
    .finally(() => {
      refreshing = undefined;
    });
  return refreshing;
}

const refreshOnExpiry: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    const expired = error instanceof ConnectError && error.code === Code.Unauthenticated;
    if (!expired || noRefresh.has(request.method.name) || request.stream) throw error;
    if (!(await refreshSession())) throw error;
    return await next(request);
  }
};

export const transport = createConnectTransport({
  baseUrl,
  fetch: (input, init) => globalThis.fetch(input, { ...init, credentials: "same-origin" }),
  interceptors: [refreshOnExpiry],
});

/** Every service's client, over the cookie transport. */
export const api = createServiceClients(transport);
export const auth = api.auth;

/** The server's message for an error, as people should read it. */
export function errorMessage(error: unknown): string {
  if (error instanceof ConnectError) return error.rawMessage || Code[error.code];
  if (error instanceof Error) return error.message;
  return String(error);
}

export function isCode(error: unknown, code: Code): boolean {
  return error instanceof ConnectError && error.code === code;
}

export { Code };

/** A protobuf timestamp as local date and time, or a dash. */
export function when(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return "—";
  return timestampDate(ts as Parameters<typeof timestampDate>[0]).toLocaleString();
}

/** The server's own origin, for commands to copy (`wap-agent enroll --server …`). */
export const serverUrl = baseUrl;

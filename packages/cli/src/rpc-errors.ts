/**
 * Turns what the server (or the network) answered into one line a person can act on, with the
 * exit status that goes with it. Applied to every call of a session, so no command prints a
 * Connect error or a stack trace.
 *
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { CliError, ExitCode } from "./exit-codes.js";

/** How the CLI authenticates: a device key from `wap login`, or a service-account token. */
export type SignInKind = "device" | "token";

/** A CliError that also remembers the RPC's code, for commands that treat one code specially. */
export class RpcError extends CliError {
  constructor(
    message: string,
    exitCode: number,
    readonly code: Code,
  ) {
    super(message, exitCode);
    this.name = "RpcError";
  }
}

export function explainRpcError(error: unknown, server: string, kind: SignInKind): unknown {
  if (error instanceof CliError) return error;
  const connectError = ConnectError.from(error);
  const detail = connectError.rawMessage;
  switch (connectError.code) {
    case Code.Unavailable:
    case Code.Unknown:
      if (connectError.code === Code.Unknown && !isNetworkFailure(connectError)) break;
      return new RpcError(
        `cannot reach the server at ${server} (${detail}): check the address (--server or WAP_SERVER) and that the server is running`,
        ExitCode.error,
        connectError.code,
      );
    case Code.Unauthenticated:
      return new RpcError(
        kind === "device"
          ? `this device is no longer signed in to ${server} (it was signed out or removed, or its sign-in expired): run \`wap login\``
          : `${server} refused the service-account token: check WAP_TOKEN or --token (it may have been revoked)`,
        ExitCode.notSignedIn,
        connectError.code,
      );
    case Code.PermissionDenied:
      return new RpcError(
        `not allowed: ${detail} (ask a workspace administrator for access)`,
        ExitCode.error,
        connectError.code,
      );
    case Code.DeadlineExceeded:
      return new RpcError(
        `the server did not answer in time (${detail}): try again`,
        ExitCode.error,
        connectError.code,
      );
    default:
      break;
  }
  return new RpcError(`${server}: ${detail}`, ExitCode.error, connectError.code);
}

function isNetworkFailure(error: ConnectError): boolean {
  const cause = error.cause as NodeJS.ErrnoException | undefined;
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EHOSTUNREACH|ETIMEDOUT/.test(
    `${cause?.code ?? ""} ${error.rawMessage}`,
  );
}

/**
 * The same clients, with every unary call's failure rewritten by {@link explainRpcError}.
 * (An interceptor cannot do this: the transport turns whatever it throws back into a ConnectError.)
 */
export function explainingClients<T extends object>(clients: T, server: string, kind: SignInKind): T {
  const wrapService = (service: object) =>
    new Proxy(service, {
      get(target, name) {
        const method: unknown = Reflect.get(target, name);
        if (typeof method !== "function") return method;
        return (...args: unknown[]) => {
          const result: unknown = method.apply(target, args);
          return result instanceof Promise
            ? result.catch((error: unknown) => {
                throw explainRpcError(error, server, kind);
              })
            : result;
        };
      },
    });
  return new Proxy(clients, {
    get(target, name) {
      const service: unknown = Reflect.get(target, name);
      return typeof service === "object" && service !== null ? wrapService(service) : service;
    },
  });
}

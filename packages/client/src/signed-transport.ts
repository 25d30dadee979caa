/**
 * Request signing for agent daemons and CLI devices: instead of a token, each call carries
 *
 *     Authorization: Platform <id>:<unix seconds>:<nonce>:<procedure>:<signature>
 *
 * where `procedure` is the RPC's Connect path (`/platform.v1.DaemonService/SyncDaemon`),
 * `nonce` 24 lowercase hex digits used once, and `signature` base64url (no padding) of a DER
 * ECDSA P-256 signature over SHA-256 of the first four fields joined by colons. The server
 * accepts a challenge once, within a few minutes of its clock, for the procedure it names; on a
 * stream it is checked when the stream opens.
 *
 * This module builds no service client (signed-requests.ts does): a program that calls few
 * services imports it (`@wap/client/signed-transport`) with only those services' descriptors.
 *
 * @module
 */
import { createPrivateKey, type KeyObject, randomBytes, sign } from "node:crypto";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";

/** Who signs, and with what. */
export interface PlatformSignerOptions {
  /** The daemon id (from EnrollDaemon) or the device id (the CLI's `Platform-Client-Device-Id`). */
  readonly id: string;
  /** The ECDSA P-256 private key whose public half the server holds: a KeyObject or PKCS#8 PEM. */
  readonly privateKey: KeyObject | string;
  /** The signer's clock; the real clients never correct theirs. */
  readonly now?: () => Date;
}

/** Builds challenges for one identity. */
export interface PlatformSigner {
  readonly id: string;
  /** The `Authorization` value for one call of `procedure` (`/platform.v1.Service/Method`). */
  authorization(procedure: string): string;
  /** An interceptor that signs every call for its own procedure, with a fresh nonce and time. */
  readonly interceptor: Interceptor;
}

/**
 * Signs requests as a daemon or a CLI device.
 *
 * @example
 * ```ts
 * const signer = createPlatformSigner({ id: daemonId, privateKey });
 * const client = createDaemonClient({ baseUrl: "http://127.0.0.1:8080", signer });
 * await client.daemons.syncDaemon({ users: ["ubuntu"], privateIps: [], metadata: {} });
 *
 * // A CLI device signs the same way, next to its device-id header:
 * const cli = createPlatformClient({ baseUrl, interceptors: [createPlatformSigner({ id: deviceId, privateKey }).interceptor] });
 * await cli.users.whoami({}, { headers: { "Platform-Client-Device-Id": deviceId } });
 * ```
 */
export function createPlatformSigner(options: PlatformSignerOptions): PlatformSigner {
  const key =
    typeof options.privateKey === "string" ? createPrivateKey(options.privateKey) : options.privateKey;
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new TypeError("a Platform signer needs an ECDSA P-256 private key");
  }
  const now = options.now ?? (() => new Date());
  const authorization = (procedure: string) => `Platform ${signChallenge(key, options.id, procedure, now())}`;
  return {
    id: options.id,
    authorization,
    interceptor: (next) => async (request) => {
      // The path the server compares with is the procedure's, whatever prefix baseUrl carries.
      const procedure = `/${request.service.typeName}/${request.method.name}`;
      request.header.set("Authorization", authorization(procedure));
      return next(request);
    },
  };
}

/** `<id>:<ts>:<nonce>:<procedure>:<sig>`, the value after `Platform `. */
export function signChallenge(privateKey: KeyObject, id: string, procedure: string, at: Date): string {
  const seconds = Math.floor(at.getTime() / 1000);
  const nonce = randomBytes(12).toString("hex");
  const signed = `${id}:${seconds}:${nonce}:${procedure}`;
  const signature = sign("sha256", Buffer.from(signed), { key: privateKey, dsaEncoding: "der" });
  return `${signed}:${signature.toString("base64url")}`;
}

/** How a daemon reaches the server. */
export interface DaemonClientOptions {
  /** e.g. `http://127.0.0.1:8080` (h2c with prior knowledge) or `https://…` (h2 through ALPN). */
  readonly baseUrl: string;
  /** Signs every call; absent before enrolment, when no Authorization header is sent. */
  readonly signer?: PlatformSigner;
  /** Sent on every call, e.g. `Platform-Daemon-Hostname` and `Platform-Daemon-Version`. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly interceptors?: readonly Interceptor[];
  /**
   * Send an HTTP/2 PING on a quiet connection this often, and drop the connection (failing its
   * streams) when one is not answered within `pingTimeoutMs` (default 15 s): how a long-lived
   * stream notices a network that vanished without a reset. Off by default, as the agent at the
   * other end of the contract sends none.
   */
  readonly pingIntervalMs?: number;
  readonly pingTimeoutMs?: number;
}

/** The daemon's own HTTP/2 connection, with no service client built on it. */
export interface DaemonTransport {
  readonly transport: Transport;
  /** Closes the connection, and with it every open stream. */
  close(): void;
}

/**
 * The transport of {@link createDaemonClient} alone: for a caller that builds the clients of the
 * few services it calls, so that only their part of the contract is loaded and built.
 */
export function createDaemonTransport(options: DaemonClientOptions): DaemonTransport {
  const sessions = new Http2SessionManager(
    options.baseUrl,
    options.pingIntervalMs === undefined
      ? {}
      : { pingIntervalMs: options.pingIntervalMs, pingTimeoutMs: options.pingTimeoutMs ?? 15_000 },
  );
  const interceptors: Interceptor[] = [];
  const headers = Object.entries(options.headers ?? {});
  if (headers.length > 0) {
    interceptors.push((next) => async (request) => {
      for (const [name, value] of headers) request.header.set(name, value);
      return next(request);
    });
  }
  if (options.signer) interceptors.push(options.signer.interceptor);
  interceptors.push(...(options.interceptors ?? []));
  const transport = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    sessionManager: sessions,
    interceptors,
  });
  return { transport, close: () => sessions.abort() };
}

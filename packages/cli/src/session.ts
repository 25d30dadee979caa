/**
 * Who the CLI talks to and as whom, for one command: the server (`--server`, `WAP_SERVER`, or the
 * one signed in to) and the credentials (a service-account token from `--token`/`WAP_TOKEN`, else
 * the device key from `wap login`, signing every request). Requests go out as the agent daemon's
 * do: Connect with binary protobuf over one HTTP/2 connection.
 *
 * @module
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { hostname } from "node:os";
import type { Interceptor, Transport } from "@connectrpc/connect";
import type { ServiceClients } from "@wap/client";
import { type CliConfig, ConfigStore, configDir } from "./config.js";
import { CliError, notSignedIn, usageError } from "./exit-codes.js";
import { createOutput, type Output } from "./output.js";
import type { SignInKind } from "./rpc-errors.js";
import { cliVersion } from "./version.js";

/** The options every command takes. */
export interface GlobalOptions {
  readonly server?: string;
  readonly token?: string;
  readonly workspace?: string;
  readonly json?: boolean;
}

/** What a command runs with. */
export interface CommandContext {
  readonly env: NodeJS.ProcessEnv;
  readonly options: GlobalOptions;
  readonly store: ConfigStore;
  readonly out: Output;
}

export function commandContext(options: GlobalOptions, env: NodeJS.ProcessEnv = process.env): CommandContext {
  return { env, options, store: new ConfigStore(configDir(env)), out: createOutput(options.json === true) };
}

/** A connection to the server with credentials. Close it when the command is done. */
export interface Session<Clients extends object = ServiceClients> {
  readonly server: string;
  readonly kind: SignInKind;
  readonly config: CliConfig;
  readonly clients: Clients;
  /** The caller's subject id: the user's, or the service account's (from its token). */
  readonly subjectId: string;
  close(): void;
}

/** A session with the clients of these services at least. */
export type SessionWith<Service extends keyof ServiceClients> = Session<Pick<ServiceClients, Service>>;

/** Builds the clients a command calls over the session's transport. */
export type ClientsFor<Clients extends object> = (transport: Transport) => Clients;

/** The `Platform-Client-*` headers: which machine and build is calling. */
export function clientHeaders(deviceId?: string): Record<string, string> {
  return {
    "Platform-Client-Hostname": hostname(),
    "Platform-Client-Version": cliVersion,
    "Platform-Client-OS": `${process.platform}/${process.arch}`,
    ...(deviceId === undefined ? {} : { "Platform-Client-Device-Id": deviceId }),
  };
}

/** `http(s)://host[:port]` without a trailing slash; anything else is a usage error. */
export function normalizeServer(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(`--server must be a URL such as https://wap.example.com (got "${url}")`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw usageError(`--server must be an http:// or https:// URL (got "${url}")`);
  }
  return parsed.toString().replace(/\/+$/, "");
}

/** The token for scripts: `--token`, else `WAP_TOKEN`. */
export function tokenOf(ctx: CommandContext): string | undefined {
  const token = ctx.options.token ?? ctx.env.WAP_TOKEN;
  return token === undefined || token === "" ? undefined : token;
}

/** The server named on the command line or in the environment, else the one signed in to. */
export function serverOf(ctx: CommandContext, config: CliConfig): string | undefined {
  const named = ctx.options.server ?? (ctx.env.WAP_SERVER || undefined);
  return named === undefined ? config.server : normalizeServer(named);
}

/**
 * The service-account id a token names, for display: the `sub` claim of a PASETO v4.public token
 * (its claims are signed, not encrypted), or the id inside a legacy `wapsa_<id>_<secret>` one. Read
 * without checking the signature: the server checks the token on every call.
 */
function serviceAccountId(token: string): string {
  const legacy = /^wapsa_([0-9a-f-]{36})_[0-9a-f]+$/.exec(token);
  if (legacy) return legacy[1]!;
  const payload = /^v4\.public\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(token)?.[1];
  if (payload === undefined) return "";
  try {
    // The payload is the claims (JSON) followed by the 64-byte Ed25519 signature.
    const claims = JSON.parse(Buffer.from(payload, "base64url").subarray(0, -64).toString()) as {
      sub?: unknown;
      typ?: unknown;
    };
    return claims.typ === "service_account" && typeof claims.sub === "string" ? claims.sub : "";
  } catch {
    return "";
  }
}

/** A session with a client of every service. */
export async function openSession(ctx: CommandContext): Promise<Session> {
  const { createServiceClients } = await import("@wap/client");
  return openSessionWith(ctx, createServiceClients);
}

/**
 * A session with only the clients `clientsFor` builds: the contract's descriptors of the other
 * services are then neither loaded nor built.
 */
export async function openSessionWith<Clients extends object>(
  ctx: CommandContext,
  clientsFor: ClientsFor<Clients>,
): Promise<Session<Clients>> {
  const config = await ctx.store.read();
  const token = tokenOf(ctx);
  if (token !== undefined) {
    const server = ctx.options.server ?? ctx.env.WAP_SERVER;
    if (!server) throw notSignedIn("a token needs a server: set WAP_SERVER or pass --server");
    const auth = [bearer(token)];
    return connect(normalizeServer(server), "token", config, serviceAccountId(token), auth, clientsFor);
  }
  const server = serverOf(ctx, config);
  if (config.deviceId === undefined || config.user === undefined || config.server === undefined) {
    throw notSignedIn();
  }
  if (server !== config.server) {
    throw notSignedIn(`not signed in to ${server} (this device is signed in to ${config.server})`);
  }
  const key = await readDeviceKey(ctx.store);
  // The client and Node's HTTP/2 load only when a command calls the server.
  const { createPlatformSigner } = await import("./connection.js");
  const signer = createPlatformSigner({ id: config.deviceId, privateKey: key });
  return connect(server, "device", config, config.user.id, [signer.interceptor], clientsFor, config.deviceId);
}

async function connect<Clients extends object>(
  server: string,
  kind: SignInKind,
  config: CliConfig,
  subjectId: string,
  auth: Interceptor[],
  clientsFor: ClientsFor<Clients>,
  deviceId?: string,
): Promise<Session<Clients>> {
  const [{ createDaemonTransport }, { explainingClients }] = await Promise.all([
    import("./connection.js"),
    import("./rpc-errors.js"),
  ]);
  const { transport, close } = createDaemonTransport({
    baseUrl: server,
    headers: clientHeaders(deviceId),
    interceptors: auth,
  });
  const clients = explainingClients(clientsFor(transport), server, kind);
  return { server, kind, config, clients, subjectId, close };
}

function bearer(token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
}

async function readDeviceKey(store: ConfigStore): Promise<KeyObject> {
  const pem = await store.readFile(store.deviceKeyFile);
  if (pem === undefined) throw notSignedIn(`the device key ${store.deviceKeyFile} is missing`);
  try {
    return createPrivateKey(pem);
  } catch {
    throw new CliError(`${store.deviceKeyFile} is not a private key: remove it and run \`wap login\``);
  }
}

/** Runs `body` with a session, closing its connection afterwards. */
export async function withSession<T>(
  ctx: CommandContext,
  body: (session: Session) => Promise<T>,
): Promise<T> {
  const session = await openSession(ctx);
  try {
    return await body(session);
  } finally {
    session.close();
  }
}

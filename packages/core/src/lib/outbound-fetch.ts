/**
 * Every request the server makes to an address a user configured (OIDC discovery, tokens, JWKS
 * and UserInfo; SAML metadata) goes through {@link createOutboundFetch}, a `fetch` over an undici
 * `Agent` of its own with the limits such a request needs:
 *
 * - the response body is read as a stream and refused at `maxResponseBytes` of decoded bytes
 *   (a gzip body is inflated here, counted as it inflates: a small bomb stops at the cap);
 * - a connect timeout (the Agent's connector: DNS, TCP, TLS) and a total timeout (headers and
 *   body);
 * - the address actually connected to must be public: loopback, private, link-local,
 *   unique-local, multicast and reserved ranges are refused unless the operator allows the
 *   network. The check is the connector's DNS lookup: it runs on the addresses DNS returns, and
 *   those are the ones connected to, so a name that resolves differently the second time (DNS
 *   rebinding) gains nothing; the connected socket's address is checked again;
 * - a failed GET is remembered for `failureCacheMs` and fails again at once: anonymous callers
 *   cannot make the server fetch a broken document in a loop.
 *
 * Redirects are never followed (the Agent follows none): the caller gets the 3xx answer.
 *
 * @module
 */
import dns from "node:dns";
import net from "node:net";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import type { Agent, Dispatcher } from "undici";

export interface OutboundFetchOptions {
  /** Largest response body, counted after decoding. Default 1 MiB. */
  readonly maxResponseBytes?: number;
  /** Time to open the connection (DNS, TCP, TLS). Default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Time for the whole exchange, body included. Default 10 s. */
  readonly totalTimeoutMs?: number;
  /**
   * Networks (CIDR such as `10.0.0.0/8`, `fd00::/8`, or single addresses) that may be reached
   * although they are not public. Default none.
   */
  readonly allowNetworks?: readonly string[];
  /** How long a failed GET is answered from memory. Default 30 s; 0 remembers nothing. */
  readonly failureCacheMs?: number;
  /** Resolves host names; default the system resolver. */
  readonly lookup?: (hostname: string) => Promise<readonly { address: string; family: number }[]>;
  /** Milliseconds since the epoch, for the failure cache. */
  readonly now?: () => number;
}

/** An outbound request that was refused or failed; the message says why, for an admin. */
export class OutboundFetchError extends TypeError {
  override readonly name = "OutboundFetchError";
  /** Why: `ADDRESS_NOT_ALLOWED`, `RESPONSE_TOO_LARGE`, `TIMEOUT`, `NETWORK`, `UNSUPPORTED_URL`. */
  readonly reason: string;
  constructor(message: string, reason: string, options?: { cause?: unknown }) {
    // "fetch" in the message: callers that tell network failures by it keep working.
    super(`fetch failed: ${message}`, options);
    this.reason = reason;
  }
}

/** The fetch every outbound request uses. */
export type OutboundFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const defaults = {
  maxResponseBytes: 1024 * 1024,
  connectTimeoutMs: 5_000,
  totalTimeoutMs: 10_000,
  failureCacheMs: 30_000,
};

/** Failures remembered at most; the oldest go first. */
const maxRememberedFailures = 1000;

/** Ranges that are not the public internet. */
const nonPublic = (() => {
  const list = new net.BlockList();
  for (const [network, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.0.2.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4],
  ] as const) {
    list.addSubnet(network, prefix, "ipv4");
  }
  for (const [network, prefix] of [
    ["::", 128],
    ["::1", 128],
    ["64:ff9b::", 96],
    ["100::", 64],
    ["2001:db8::", 32],
    ["fc00::", 7],
    ["fe80::", 10],
    ["fec0::", 10],
    ["ff00::", 8],
  ] as const) {
    list.addSubnet(network, prefix, "ipv6");
  }
  return list;
})();

/**
 * Reads an allowance list (`WAP_OUTBOUND_ALLOW_NETWORKS`): CIDR networks or single addresses.
 * @throws RangeError naming the entry that is not one.
 */
export function parseNetworks(entries: readonly string[]): net.BlockList {
  const list = new net.BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === "") continue;
    const [address = "", prefixText] = entry.split("/", 2);
    const family = net.isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (family === 0 || !/^\d*$/.test(prefixText ?? "") || !(prefix >= 0 && prefix <= max)) {
      throw new RangeError(`"${entry}" is not a network such as 10.0.0.0/8, fd00::/8 or 192.0.2.7`);
    }
    list.addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6");
  }
  return list;
}

/** True when `address` may be connected to: public, or in an allowed network. */
export function isAllowedAddress(address: string, allowed: net.BlockList): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  const type = family === 4 ? "ipv4" : "ipv6";
  if (allowed.check(address, type)) return true;
  return !nonPublic.check(address, type);
}

/** Failures kept for a while by key, so that the work that failed is not repeated at once. */
export interface FailureMemory<T> {
  /** What failed under `key` less than the memory's time ago, if anything. */
  recall(key: string): T | undefined;
  remember(key: string, failure: T): void;
}

/** A {@link FailureMemory} of `ms` (0 remembers nothing), holding at most 1000 keys. */
export function createFailureMemory<T>(ms: number, now: () => number = Date.now): FailureMemory<T> {
  const entries = new Map<string, { failure: T; until: number }>();
  return {
    recall(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.until > now()) return entry.failure;
      entries.delete(key);
      return undefined;
    },
    remember(key, failure) {
      if (ms <= 0) return;
      if (entries.size >= maxRememberedFailures) entries.delete(entries.keys().next().value!);
      entries.set(key, { failure, until: now() + ms });
    },
  };
}

export function createOutboundFetch(options: OutboundFetchOptions = {}): OutboundFetch {
  const settings = { ...defaults, ...definedOnly(options) };
  const allowed = parseNetworks(options.allowNetworks ?? []);
  const resolve =
    options.lookup ?? ((hostname: string) => dns.promises.lookup(hostname, { all: true, verbatim: true }));
  const now = options.now ?? Date.now;
  // A failed GET: the error it threw, or the error status it answered (replayed as is).
  const failures = createFailureMemory<{ error?: OutboundFetchError; answer?: RememberedAnswer }>(
    settings.failureCacheMs,
    now,
  );
  const remember = failures.remember;

  /** A `lookup` for net.connect that only ever hands over allowed addresses. */
  const guardedLookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !isAllowedAddress(a.address, allowed));
        const first = addresses[0];
        if (refused !== undefined || first === undefined) {
          const error =
            first === undefined
              ? new OutboundFetchError(`${hostname} has no address`, "NETWORK")
              : notAllowed(hostname, refused!.address);
          callback(error as NodeJS.ErrnoException, "", 0);
          return;
        }
        if ((lookupOptions as { all?: boolean }).all) {
          (callback as unknown as (e: null, a: readonly { address: string; family: number }[]) => void)(
            null,
            addresses,
          );
        } else callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, "", 0),
    );
  };

  // undici is loaded with the first request: most platforms never fetch anything outbound.
  let agent: Promise<Agent> | undefined;
  const dispatcher = () => (agent ??= import("undici").then(createAgent));
  const createAgent = ({
    Agent,
    buildConnector,
  }: Pick<typeof import("undici"), "Agent" | "buildConnector">): Agent => {
    const connect = buildConnector({ timeout: settings.connectTimeoutMs, lookup: guardedLookup });
    return new Agent({
      connect(connectOptions, callback) {
        connect(connectOptions, (error, socket) => {
          if (error !== null) {
            callback(
              error.name === "ConnectTimeoutError"
                ? new OutboundFetchError(
                    `could not connect to ${connectOptions.hostname} within ${settings.connectTimeoutMs} ms`,
                    "TIMEOUT",
                    { cause: error },
                  )
                : error,
              null,
            );
            return;
          }
          // The lookup checked the address; this catches any path around it.
          const remote = socket.remoteAddress;
          if (remote !== undefined && !isAllowedAddress(remote, allowed)) {
            socket.destroy();
            callback(notAllowed(connectOptions.hostname, remote), null);
            return;
          }
          callback(null, socket);
        });
      },
      headersTimeout: settings.totalTimeoutMs,
      bodyTimeout: settings.totalTimeoutMs,
      maxRedirections: 0,
    });
  };

  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : input.toString());
    const method = (init.method ?? request?.method ?? "GET").toUpperCase();
    const key = method === "GET" ? url.href : undefined;
    const remembered = key === undefined ? undefined : failures.recall(key);
    if (remembered !== undefined) {
      if (remembered.error) throw remembered.error;
      return replay(remembered.answer!, url);
    }
    try {
      const answer = await exchange(url, method, init, request);
      if (key !== undefined && answer.status >= 400) {
        remember(key, {
          answer: {
            status: answer.status,
            headers: [...answer.headers],
            body: await answer.clone().arrayBuffer(),
          },
        });
      }
      return answer;
    } catch (error) {
      const failure =
        error instanceof OutboundFetchError
          ? error
          : new OutboundFetchError(
              describe(error),
              error instanceof Error && error.name === "AbortError" ? "TIMEOUT" : "NETWORK",
              { cause: error },
            );
      if (key !== undefined) remember(key, { error: failure });
      throw failure;
    }
  };

  async function exchange(url: URL, method: string, init: RequestInit, request: Request | undefined) {
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new OutboundFetchError(`${url.protocol} URLs are not fetched`, "UNSUPPORTED_URL");
    }
    // Literal addresses skip the lookup: checked here.
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    if (net.isIP(literal) !== 0 && !isAllowedAddress(literal, allowed)) throw notAllowed(literal, literal);
    const headers = new Headers(init.headers ?? request?.headers);
    // Asked for as is; a body compressed anyway is still inflated under the cap.
    headers.set("accept-encoding", "identity");
    const body = await bodyOf(init.body ?? (request ? await request.arrayBuffer() : undefined));

    const controller = new AbortController();
    const total = setTimeout(
      () =>
        controller.abort(
          new OutboundFetchError(
            `no complete answer from ${url.host} within ${settings.totalTimeoutMs} ms`,
            "TIMEOUT",
          ),
        ),
      settings.totalTimeoutMs,
    );
    const outer = init.signal ?? request?.signal;
    const onOuterAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) onOuterAbort();
    else outer?.addEventListener("abort", onOuterAbort, { once: true });
    try {
      const response = await send(url, method, headers, body, controller.signal);
      const status = response.statusCode;
      const bytes = await readCapped(response, controller.signal, url);
      const answerHeaders = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (value === undefined || name === "content-encoding" || name === "content-length") continue;
        for (const one of Array.isArray(value) ? value : [value]) answerHeaders.append(name, one);
      }
      const nullBody = status === 204 || status === 205 || status === 304 || method === "HEAD";
      const answer = new Response(nullBody ? null : bytes, {
        status,
        headers: answerHeaders,
      });
      Object.defineProperty(answer, "url", { value: url.href });
      if (init.redirect === "error" && status >= 300 && status < 400) {
        throw new OutboundFetchError(
          `${url.href} redirects (HTTP ${status}); redirects are not followed`,
          "NETWORK",
        );
      }
      return answer;
    } catch (error) {
      throw controller.signal.aborted && !(error instanceof OutboundFetchError)
        ? reasonOf(controller.signal, error)
        : error;
    } finally {
      clearTimeout(total);
      outer?.removeEventListener("abort", onOuterAbort);
    }
  }

  async function send(
    url: URL,
    method: string,
    headers: Headers,
    body: Uint8Array | undefined,
    signal: AbortSignal,
  ): Promise<Dispatcher.ResponseData> {
    return (await dispatcher()).request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: method as Dispatcher.HttpMethod,
      headers: Object.fromEntries(headers),
      body,
      signal,
    });
  }

  /** The body, decoded, refused beyond the cap. */
  async function readCapped(
    response: Dispatcher.ResponseData,
    signal: AbortSignal,
    url: URL,
  ): Promise<Uint8Array> {
    const encoding = String(response.headers["content-encoding"] ?? "identity")
      .trim()
      .toLowerCase();
    const declared = Number(response.headers["content-length"]);
    const tooLarge = () =>
      new OutboundFetchError(
        `the answer of ${url.host} is larger than ${settings.maxResponseBytes} bytes`,
        "RESPONSE_TOO_LARGE",
      );
    const raw: Readable = response.body;
    if (encoding === "identity" && declared > settings.maxResponseBytes) {
      raw.destroy();
      throw tooLarge();
    }
    const decoded: Readable =
      encoding === "gzip" || encoding === "x-gzip"
        ? raw.pipe(zlib.createGunzip())
        : encoding === "deflate"
          ? raw.pipe(zlib.createInflate())
          : encoding === "br"
            ? raw.pipe(zlib.createBrotliDecompress())
            : encoding === "identity"
              ? raw
              : failWith(raw, new OutboundFetchError(`unknown Content-Encoding ${encoding}`, "NETWORK"));
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of decoded.iterator({ destroyOnReturn: true })) {
        if (signal.aborted) throw reasonOf(signal, undefined);
        size += (chunk as Buffer).byteLength;
        if (size > settings.maxResponseBytes) throw tooLarge();
        chunks.push(chunk as Buffer);
      }
    } finally {
      raw.destroy();
      if (decoded !== raw) decoded.destroy();
    }
    return Buffer.concat(chunks, size);
  }
}

interface RememberedAnswer {
  readonly status: number;
  readonly headers: readonly [string, string][];
  readonly body: ArrayBuffer;
}

function replay(answer: RememberedAnswer, url: URL): Response {
  const response = new Response(answer.body.slice(0), {
    status: answer.status,
    headers: answer.headers as [string, string][],
  });
  Object.defineProperty(response, "url", { value: url.href });
  return response;
}

function failWith(stream: Readable, error: Error): never {
  stream.destroy();
  throw error;
}

function notAllowed(hostname: string, address: string): OutboundFetchError {
  return new OutboundFetchError(
    `${hostname} resolves to ${address}, which is not a public address; an operator may allow its network (WAP_OUTBOUND_ALLOW_NETWORKS)`,
    "ADDRESS_NOT_ALLOWED",
  );
}

function reasonOf(signal: AbortSignal, cause: unknown): unknown {
  const reason: unknown = signal.reason;
  if (reason instanceof OutboundFetchError) return reason;
  return new OutboundFetchError("the request was aborted or timed out", "TIMEOUT", {
    cause: reason ?? cause,
  });
}

type Body = NonNullable<RequestInit["body"]>;

async function bodyOf(body: Body | null | undefined | ArrayBuffer): Promise<Uint8Array | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return new Uint8Array(await new Response(body as Body).arrayBuffer());
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? `${error.message} (${code})` : error.message;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

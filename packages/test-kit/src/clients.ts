/**
 * connect-node transports for every protocol the server speaks, and typed clients over them.
 */
import type { DescService } from "@bufbuild/protobuf";
import {
  type CallOptions,
  type Client,
  ConnectError,
  createClient,
  type Transport,
} from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";

export type Protocol =
  | "connect-json-h2"
  | "connect-binary-h2"
  | "connect-json-h1"
  | "grpc-h2"
  | "grpc-web-h1";

export const protocols: readonly Protocol[] = [
  "connect-json-h2",
  "connect-binary-h2",
  "connect-json-h1",
  "grpc-h2",
  "grpc-web-h1",
];

export function transportFor(
  protocol: Protocol,
  baseUrl: string,
  nodeOptions?: { ca?: string | Buffer },
): Transport {
  const common = { baseUrl, ...(nodeOptions && { nodeOptions }) };
  switch (protocol) {
    case "connect-json-h2":
      return createConnectTransport({ ...common, httpVersion: "2" });
    case "connect-binary-h2":
      return createConnectTransport({ ...common, httpVersion: "2", useBinaryFormat: true });
    case "connect-json-h1":
      return createConnectTransport({ ...common, httpVersion: "1.1" });
    case "grpc-h2":
      return createGrpcTransport({ ...common, httpVersion: "2" } as Parameters<
        typeof createGrpcTransport
      >[0]);
    case "grpc-web-h1":
      return createGrpcWebTransport({ ...common, httpVersion: "1.1" });
  }
}

export function clientFor<S extends DescService>(service: S, transport: Transport): Client<S> {
  return createClient(service, transport);
}

/** One typed client per named service, all over `transport`. */
export function clientsFor<M extends Record<string, DescService>>(
  transport: Transport,
  services: M,
): { [K in keyof M]: Client<M[K]> } {
  const clients = Object.entries(services).map(([name, service]) => [name, createClient(service, transport)]);
  return Object.fromEntries(clients) as { [K in keyof M]: Client<M[K]> };
}

/** Call options carrying a bearer token. */
export function bearer(token: string, extra: CallOptions = {}): CallOptions {
  return {
    ...extra,
    headers: { ...(extra.headers as Record<string, string>), authorization: `Bearer ${token}` },
  };
}

/** Reads a stream to its end: undefined when it ends cleanly, else the error it ends with. */
export async function streamError(stream: AsyncIterable<unknown>): Promise<ConnectError | undefined> {
  try {
    for await (const _ of stream) {
      // Only how it ends counts.
    }
    return undefined;
  } catch (error) {
    return ConnectError.from(error);
  }
}

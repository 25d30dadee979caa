/**
 * The daemon client: every service of the contract over a signed transport (signed-transport.ts,
 * where the signing is described).
 *
 * @module
 */
import type { Transport } from "@connectrpc/connect";
import { createServiceClients, type ServiceClients } from "./clients.js";
import { createDaemonTransport, type DaemonClientOptions } from "./signed-transport.js";

/** The services over the daemon's own HTTP/2 connection. */
export interface DaemonClient extends ServiceClients {
  readonly transport: Transport;
  /** Closes the connection, and with it every open stream. */
  close(): void;
}

/**
 * A client that talks as the agent daemon does: Connect with binary protobuf over HTTP/2 only
 * (h2c for `http://`), uncompressed requests, no HTTP/2 PINGs, every call signed.
 */
export function createDaemonClient(options: DaemonClientOptions): DaemonClient {
  const { transport, close } = createDaemonTransport(options);
  return { ...createServiceClients(transport), transport, close };
}

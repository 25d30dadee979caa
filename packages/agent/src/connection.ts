/**
 * The agent's connection to the server: Connect with binary protobuf over its own HTTP/2
 * connection, every call signed with the agent's key once it has a daemon id, and the
 * `Platform-Daemon-*` headers that say which machine and build it is.
 *
 * @module
 */
import type { KeyObject } from "node:crypto";
import { createDaemonClient, createPlatformSigner, type DaemonClient } from "@wap/client";
import { machineFingerprint } from "./machine.js";
import { agentVersion } from "./version.js";

export interface ConnectionOptions {
  readonly server: string;
  readonly key: KeyObject;
  /** Absent before enrolment: nothing is signed then. */
  readonly daemonId?: string;
  readonly hostname: string;
}

/** PINGs on a quiet connection: a network that vanished fails the streams within 45 s. */
const pingIntervalMs = 30_000;
const pingTimeoutMs = 15_000;

export function connect(options: ConnectionOptions): DaemonClient {
  return createDaemonClient({
    baseUrl: options.server,
    ...(options.daemonId !== undefined && {
      signer: createPlatformSigner({ id: options.daemonId, privateKey: options.key }),
    }),
    headers: {
      "Platform-Daemon-Hostname": options.hostname,
      "Platform-Daemon-Version": agentVersion,
      "Platform-Daemon-Fingerprint": machineFingerprint(),
    },
    pingIntervalMs,
    pingTimeoutMs,
  });
}

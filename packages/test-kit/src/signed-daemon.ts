/**
 * An agent daemon as the server sees it (docs/agent-protocol.md): a P-256 key, binary Connect over
 * its own HTTP/2 connection, every call signed with a fresh `Platform` challenge over the path
 * it is sent to, and the `Platform-Daemon-*` headers. The control stream opens with no first
 * message, as the agent's does.
 */
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type ConnectResponse, DaemonControlService, DaemonService } from "@wap/api";
import { expect } from "vitest";
import { aDaemonKey, type DaemonKey, signChallenge } from "./daemon-key.js";
import { responseReader } from "./response-reader.js";

export { aDaemonKey, type DaemonKey, signChallenge };

/** Signs every call once the daemon has an id; sends the hostname and build headers always. */
function daemonHeaders(daemon: SignedDaemon): Interceptor {
  return (next) => async (req) => {
    req.header.set("platform-daemon-hostname", daemon.hostname);
    req.header.set("platform-daemon-version", "0.0.0-test");
    if (daemon.id !== undefined) {
      const procedure = new URL(req.url).pathname;
      req.header.set("authorization", `Platform ${signChallenge(daemon.key, daemon.id, procedure)}`);
    }
    return next(req);
  };
}

/** A control stream as a test drives it. */
export interface ControlStream {
  /** The next message the server sent; rejects with the stream's error. */
  next(): Promise<ConnectResponse>;
  /** The next message that is not a HeartbeatAck. */
  nextNotAck(): Promise<ConnectResponse>;
  /** Sends `Heartbeat{}`. */
  heartbeat(): void;
  /** Resolves with how the stream ended: undefined for a clean end, else the error. */
  ended(): Promise<unknown>;
  /** Cancels the stream from the client side. */
  cancel(): void;
}

export class SignedDaemon {
  id: string | undefined;
  readonly transport: Transport;
  readonly daemons: Client<typeof DaemonService>;
  readonly control: Client<typeof DaemonControlService>;

  constructor(
    baseUrl: string,
    readonly hostname: string,
    readonly key: DaemonKey = aDaemonKey(),
  ) {
    this.transport = createConnectTransport({
      baseUrl,
      httpVersion: "2",
      useBinaryFormat: true,
      interceptors: [daemonHeaders(this)],
    });
    this.daemons = createClient(DaemonService, this.transport);
    this.control = createClient(DaemonControlService, this.transport);
  }

  /** The same daemon (key and id) talking to another server instance, on a new connection. */
  at(baseUrl: string): SignedDaemon {
    const moved = new SignedDaemon(baseUrl, this.hostname, this.key);
    moved.id = this.id;
    return moved;
  }

  /** EnrollDaemon, as the agent sends it (`caId` explicitly empty); keeps the id. */
  async enroll(token: string) {
    const response = await this.daemons.enrollDaemon({
      token,
      caId: "",
      authMethod: "tpm",
      authPubkey: this.key.pem,
    });
    this.id = response.id;
    return response;
  }

  /** SyncDaemon with no ids, as the agent sends it. */
  sync(users: string[] = ["ubuntu"]) {
    return this.daemons.syncDaemon({
      users,
      privateIps: ["10.0.0.5:4022"],
      metadata: { hostname: this.hostname },
    });
  }

  /** Opens the control stream with no first message. */
  connect(): ControlStream {
    const abort = new AbortController();
    const outgoing: Array<{ msg: { case: "heartbeat"; value: object } }> = [];
    let wake: (() => void) | undefined;
    async function* requests() {
      while (!abort.signal.aborted) {
        const next = outgoing.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          abort.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        wake = undefined;
      }
    }
    const responses = responseReader(
      this.control.connect(requests(), { signal: abort.signal })[Symbol.asyncIterator](),
      "the control stream",
    );
    return {
      next: responses.next,
      nextNotAck: () => responses.nextExcept("heartbeatAck"),
      heartbeat() {
        outgoing.push({ msg: { case: "heartbeat", value: {} } });
        wake?.();
      },
      ended: responses.ended,
      cancel() {
        abort.abort();
      },
    };
  }
}

/** Opens the stream and waits until it is in effect: a heartbeat is answered after the daemon is marked online. */
export async function openControlStream(daemon: SignedDaemon): Promise<ControlStream> {
  const stream = daemon.connect();
  expect((await stream.next()).msg.case).toBe("heartbeatAck");
  stream.heartbeat();
  expect((await stream.next()).msg.case).toBe("heartbeatAck");
  return stream;
}

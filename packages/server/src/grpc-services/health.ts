/**
 * gRPC health checking (`grpc.health.v1.Health`), as load balancers, Kubernetes gRPC probes and
 * `grpc_health_probe` call it, over gRPC, gRPC-Web and Connect alike. Every service this server
 * serves, and the server as a whole (`""`), is SERVING while the database answers a ping and the
 * server is not draining, NOT_SERVING otherwise. Check of an unknown service is `not_found`;
 * Watch of one reports SERVICE_UNKNOWN and stays open, as the health-checking protocol says. A
 * Watch open when the drain starts reports NOT_SERVING and then ends, so it does not hold the drain.
 *
 * @module
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import type { HealthCheckResponseSchema } from "@wap/api";
import {
  Health,
  type HealthCheckRequest,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "@wap/api";

export interface HealthSettings {
  /** Answers when the database does. */
  readonly ping: () => Promise<void>;
  /** Aborted when the server starts draining. */
  readonly closing?: AbortSignal;
  /** The full names of the services served (the server as a whole, `""`, is added). */
  readonly services: readonly string[];
  /** How often Watch looks at the database again. */
  readonly watchIntervalMs?: number;
}

type Answer = MessageInitShape<typeof HealthCheckResponseSchema>;

export function registerHealth(router: ConnectRouter, settings: HealthSettings): void {
  const known = new Set(["", ...settings.services]);
  const interval = settings.watchIntervalMs ?? 5_000;

  async function serving(): Promise<ServingStatus> {
    if (settings.closing?.aborted) return ServingStatus.NOT_SERVING;
    try {
      await settings.ping();
    } catch {
      return ServingStatus.NOT_SERVING;
    }
    // A drain that began while the ping was out wins: the answer leaves during the drain.
    return settings.closing?.aborted ? ServingStatus.NOT_SERVING : ServingStatus.SERVING;
  }

  router.service(Health, {
    async check(request: HealthCheckRequest): Promise<Answer> {
      if (!known.has(request.service)) {
        throw new ConnectError(`unknown service "${request.service}"`, Code.NotFound);
      }
      return { status: await serving() };
    },
    async list(): Promise<MessageInitShape<typeof import("@wap/api").HealthListResponseSchema>> {
      const status = await serving();
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status }])) };
    },
    async *watch(request: HealthCheckRequest, context: HandlerContext): AsyncGenerator<Answer> {
      let last: ServingStatus | undefined;
      while (!context.signal.aborted) {
        const status = known.has(request.service) ? await serving() : ServingStatus.SERVICE_UNKNOWN;
        if (status !== last) {
          last = status;
          yield { status } satisfies Partial<HealthCheckResponse>;
        }
        // Once the drain is reported there is nothing more to say; ending here lets it finish.
        if (settings.closing?.aborted) return;
        await nextLook(context.signal, settings.closing, interval);
      }
    },
  });
}

/** Resolves after `ms`, or at once when the call ends or the server starts draining. */
function nextLook(signal: AbortSignal, closing: AbortSignal | undefined, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      closing?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    if (closing && !closing.aborted) closing.addEventListener("abort", done, { once: true });
  });
}

/**
 * DaemonSessionService.Session, the daemon's side of a web terminal (docs/agent-protocol.md),
 * as the agent opens it: binary Connect over HTTP/2, opened before the user's shell starts, with
 * `Connect-Timeout-Ms: 28800000` (8 h, honoured like any deadline).
 *
 * The platform admits the daemon and runs the stream (core's `daemons/session-stream.ts`: the
 * `ready` handshake, the claim, the relay through this instance's {@link SessionRelayHub}); this
 * handler carries it over connect-node and answers how it ended.
 *
 * @module
 */
import type { HandlerContext } from "@connectrpc/connect";
import { DaemonSessionService, type SessionRequest } from "@wap/api";
import { procedureOf, type SessionStreamMessage, sessionDeadlineError } from "@wap/core/internal";
import { answer, requireEdge } from "../connect-context.js";
import { callContextOf, type EdgeSettings } from "../edge.js";

const method = DaemonSessionService.method.session;

/** The Connect handler of DaemonSessionService.Session. */
export function sessionStreamHandler(settings: EdgeSettings) {
  return async function* (
    requests: AsyncIterable<SessionRequest>,
    context: HandlerContext,
  ): AsyncGenerator<SessionStreamMessage> {
    const edge = requireEdge(context);
    edge.rpc = procedureOf(method);
    try {
      const ctx = callContextOf(edge, settings, method, context.signal);
      yield* await settings.platform.bidiStream(method, ctx, requests, {
        timeLeftMs: () => context.timeoutMs(),
        observer: {
          event: (name) => edge.streamSpan?.event(name),
          annotate: (attributes) => edge.streamSpan?.annotate(attributes),
        },
      });
      edge.code = context.signal.aborted ? "canceled" : "ok";
    } catch (error) {
      if (deadlinePassed(context)) throw answer(edge, settings, sessionDeadlineError());
      throw answer(edge, settings, error);
    }
  };
}

function deadlinePassed(context: HandlerContext): boolean {
  const left = context.timeoutMs();
  return left !== undefined && left <= 0;
}

/**
 * DaemonControlService.Connect, the daemon's control stream (docs/agent-protocol.md), as the
 * agent opens it: Connect binary over HTTP/2, no first message, and a first heartbeat only five
 * minutes later.
 *
 * The platform admits the daemon and runs the stream (core's `daemons/control-stream.ts`, over
 * this instance's {@link ServerInstance} as its host); the transports here only carry it: they
 * build the call, write what the platform yields, and answer how it ended. The agent's requests
 * reach it through the lean path of lean/control-connect.ts, every other one through connect-node
 * ({@link controlStreamHandler}).
 *
 * @module
 */
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { type ConnectRequest, DaemonControlService } from "@wap/api";
import { isPlatformError } from "@wap/core";
import { type ConnectResponseInit, procedureOf } from "@wap/core/internal";
import { answer, requireEdge } from "../connect-context.js";
import { callContextOf, type EdgeRequest, type EdgeSettings } from "../edge.js";
import { describeFault } from "../errors.js";

const method = DaemonControlService.method.connect;
const procedure = procedureOf(method);

/**
 * The connect-node handler of DaemonControlService.Connect: gRPC, gRPC-Web, and the Connect
 * requests that lean/control-connect.ts leaves to connect-node.
 */
export function controlStreamHandler(settings: EdgeSettings) {
  return async function* (
    requests: AsyncIterable<ConnectRequest>,
    context: HandlerContext,
  ): AsyncGenerator<ConnectResponseInit> {
    const edge = requireEdge(context);
    try {
      yield* await controlStream(settings, edge, context.signal, requests);
      // The stream returns only once its client has gone: the normal end of a control stream.
      edge.code = "ok";
    } catch (error) {
      // Nobody is left to answer, unless what aborted the call was the client's own bad message
      // (connect-node aborts the call when a request message does not decode).
      if (context.signal.aborted && !isRequestFault(error)) {
        endedByLeaving(edge, settings, error);
        return;
      }
      throw answer(edge, settings, error);
    }
  };
}

/**
 * A control stream that threw once its daemon had gone: the daemon leaving is how control
 * streams end (`ok`); whatever was thrown beside it that is not an answer is still logged.
 */
export function endedByLeaving(edge: EdgeRequest, settings: EdgeSettings, error: unknown): void {
  edge.code = "ok";
  if (!isPlatformError(error) && !(error instanceof ConnectError)) {
    settings.logger.warn("control stream failed as its daemon left", {
      requestId: edge.requestId,
      error: describeFault(error),
    });
  }
}

/**
 * One control stream, whatever carries it, once the platform has admitted the daemon (else the
 * refusal): the messages to send, in order. They end once the client has gone (`clientGone`
 * fired); otherwise reading them throws why the stream ends (a PlatformError or ConnectError, for
 * the transport to answer).
 */
export async function controlStream(
  settings: EdgeSettings,
  edge: EdgeRequest,
  clientGone: AbortSignal,
  requests: AsyncIterable<ConnectRequest>,
): Promise<AsyncIterable<ConnectResponseInit>> {
  edge.rpc = procedure;
  const stream = await settings.platform.bidiStream(
    method,
    callContextOf(edge, settings, method, clientGone),
    requests,
    { ...(edge.streamSpan && { observer: edge.streamSpan }) },
  );
  // Admitted. A control stream ends when its daemon leaves, which is its normal end: the request
  // is logged `ok` then, even when the log line is written before the stream has wound down. A
  // failure replaces the code when it is answered.
  edge.code = "ok";
  return stream;
}

/** A request message the client sent that could not be read: its fault, answered as such. */
function isRequestFault(error: unknown): error is ConnectError {
  return error instanceof ConnectError && error.code === Code.InvalidArgument;
}

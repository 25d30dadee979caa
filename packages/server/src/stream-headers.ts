/**
 * Response headers of a server stream go out as soon as the stream is in effect, not with its
 * first message. connect-es waits for the first chunk of a streaming response before it hands the
 * response to connect-node (so that an implementation can still add headers), so a client of an
 * event stream that stays quiet (a gRPC client waiting on `initial_metadata()`) would wait for
 * the first event or its deadline. Each server-streaming handler is wrapped: when the handler
 * calls {@link streamAccepted} (access checked, subscription in place) before its first message,
 * the wrapper answers at once with the call's own header and trailer objects and a body that
 * starts with an empty chunk (which makes connect-node write the head), then continues with the
 * handler's body. A stream refused before that answers as before (gRPC: trailers only).
 *
 * @module
 */
import {
  type ConnectRouter,
  type ContextValues,
  createContextKey,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "./lean/connect-protocol.js";
import { wrapHandlers } from "./router-handlers.js";

type Head = Pick<HandlerContext, "responseHeader" | "responseTrailer">;

const acceptedKey = createContextKey<((head: Head) => void) | undefined>(undefined, {
  description: "wap stream accepted",
});

/** Tells the wrapper that the stream of this call is in effect: its headers may go out. */
export function streamAccepted(context: HandlerContext): void {
  context.values.get(acceptedKey)?.(context);
}

/**
 * Wraps every server-streaming handler of `router`: call it at the end of connect-node's `routes`
 * callback, once every route is registered.
 */
export function sendStreamHeadersEarly(router: ConnectRouter): void {
  wrapHandlers(router, (handler) => {
    if (handler.method.methodKind !== "server_streaming") return undefined;
    return async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
      const contextValues: ContextValues = req.contextValues ?? createContextValues();
      const accepted = new Promise<Head>((resolve) => contextValues.set(acceptedKey, resolve));
      const responded = handler({ ...req, contextValues });
      const first = await Promise.race([responded, accepted]);
      if (!("responseHeader" in first)) return first;
      return {
        status: 200,
        header: first.responseHeader,
        trailer: first.responseTrailer,
        body: headThenBody(responded),
      };
    };
  });
}

/** An empty chunk (the head goes out), then the body of the response once it is ready. */
async function* headThenBody(responded: Promise<UniversalServerResponse>): AsyncIterable<Uint8Array> {
  yield new Uint8Array(0);
  const res = await responded;
  if (res.body) yield* res.body as AsyncIterable<Uint8Array>;
}

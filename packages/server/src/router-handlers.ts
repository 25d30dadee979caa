/**
 * Wrapping the handlers connect-node built for a router: the steps this server runs around
 * connect-node's own (JSON refusals, early stream headers, undecodable requests), each the same
 * way, keeping what the adapter reads of a handler.
 *
 * @module
 */
import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "./lean/connect-protocol.js";

/**
 * Replaces every handler of `router` for which `wrap` returns a function with that function.
 * Call it at the end of connect-node's `routes` callback, once every route is registered (the
 * adapter reads `router.handlers` after the callback).
 */
export function wrapHandlers(
  router: ConnectRouter,
  wrap: (
    handler: UniversalHandler,
  ) => ((req: Parameters<UniversalHandler>[0]) => ReturnType<UniversalHandler>) | undefined,
): void {
  const handlers = router.handlers;
  handlers.forEach((handler, i) => {
    const wrapped = wrap(handler);
    if (wrapped === undefined) return;
    handlers[i] = Object.assign(wrapped, {
      protocolNames: handler.protocolNames,
      service: handler.service,
      method: handler.method,
      requestPath: handler.requestPath,
      allowedMethods: handler.allowedMethods,
      supportedContentType: handler.supportedContentType,
    });
  });
}

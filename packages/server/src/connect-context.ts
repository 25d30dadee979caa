/**
 * What every Connect handler of this server shares: the edge state of its request (handed over
 * through connect's context values), and how a handler turns an error into its answer.
 *
 * @module
 */
import {
  type ContextValues,
  createContextKey,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import { shuttingDownError } from "@wap/core/internal";
import { type EdgeRequest, type EdgeSettings, edgeOf } from "./edge.js";
import { answerNoted, toConnectError } from "./errors.js";

const edgeKey = createContextKey<EdgeRequest | undefined>(undefined, { description: "wap edge request" });

/** Hands the edge state of a Node request to its Connect handler. */
export function connectContextValues(req: object): ContextValues {
  return createContextValues().set(edgeKey, edgeOf(req));
}

/** The edge state of a call, from its context values (interceptors have no HandlerContext). */
export function edgeFromValues(values: ContextValues): EdgeRequest | undefined {
  return values.get(edgeKey);
}

/** Records the code answered and turns `error` into the ConnectError to throw. */
export function answer(edge: EdgeRequest, settings: EdgeSettings, error: unknown) {
  return toConnectError(answerNoted(edge, error, settings.logger));
}

/** The edge state of the request a handler serves. */
export function requireEdge(context: HandlerContext): EdgeRequest {
  const edge = context.values.get(edgeKey);
  // Every request passes the edge before routing; reaching this would be a wiring bug.
  if (!edge) throw new Error("request reached a Connect handler without passing the edge");
  return edge;
}

/** Why a stream ended early: the client should open it again (on another instance). */
export const shuttingDown = shuttingDownError;

/**
 * The edge as seen by the HTTP endpoints that are not RPCs (SSO browser endpoints, the billing
 * webhook): what they answer for nobody signed in, so a credential that failed does not matter,
 * but the edge's refusals (rate limit, CSRF) do, except CSRF where the endpoint is exempt.
 *
 * @module
 */
import type { Http2Bindings, HttpBindings } from "@hono/node-server";
import type { PlatformError } from "@wap/core";
import type { RequestFacts } from "@wap/core/internal";
import type { Context } from "hono";
import { isCsrfExempt } from "./csrf.js";
import { type EdgeRequest, edgeOf } from "./edge.js";

export type Env = { Bindings: HttpBindings | Http2Bindings };

/** The edge state of the request, and the refusal to answer with, if any. */
export function admitted(c: Context<Env>): { edge: EdgeRequest; refusal: PlatformError | undefined } {
  const edge = edgeOf(c.env.incoming);
  if (!edge) throw new Error("request reached the app without passing the edge");
  const { refusal } = edge;
  const exempt =
    refusal?.reason === "CSRF_CHECK_FAILED" && isCsrfExempt(c.req.method, new URL(c.req.url).pathname);
  return { edge, refusal: exempt ? undefined : refusal };
}

/** Who made the request, for the audit entries core writes. */
export function requestFacts(edge: EdgeRequest): RequestFacts {
  return { ipAddress: edge.ipAddress, userAgent: edge.userAgent, requestId: edge.requestId };
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids in paths are UUIDs; anything else is unknown before it reaches storage (PostgreSQL would fail). */
export function isUuid(text: string): boolean {
  return uuidPattern.test(text);
}

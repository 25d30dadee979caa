/**
 * Which requests get a stream's span: every streaming procedure path (Connect, gRPC, gRPC-Web)
 * and every REST route of a server-streaming RPC (NDJSON). The span opens when the request
 * arrives, is active while the request is admitted and routed (so the storage calls it makes are
 * its children), and ends when the response closes, with the code the request log records.
 *
 * @module
 */
import { platformServices } from "@wap/api";
import { procedureOf } from "@wap/core/internal";
import { type EdgeRequest, type ProcedureResolver, subjectIdOf } from "./edge.js";
import type { StreamSpan, Tracing } from "./tracing.js";

/** Opens the span of a request when it is a stream; undefined for every other request. */
export type StreamSpanOpener = (httpMethod: string, path: string) => StreamSpan | undefined;

export function streamSpanOpener(tracing: Tracing, resolveProcedure: ProcedureResolver): StreamSpanOpener {
  const streams = streamingProcedures();
  return (httpMethod, path) => {
    const procedure = streams.has(path)
      ? path
      : path.startsWith("/v1/")
        ? resolveProcedure(httpMethod, path)
        : undefined;
    return procedure !== undefined && streams.has(procedure) ? tracing.stream(procedure, {}) : undefined;
  };
}

/** Hands the span to the stream's handler, with who the edge found the caller to be. */
export function attachStreamSpan(edge: EdgeRequest, span: StreamSpan): void {
  edge.streamSpan = span;
  const subjectId = subjectIdOf(edge.caller);
  span.annotate({
    "wap.request_id": edge.requestId,
    "wap.subject": edge.caller.kind,
    ...(subjectId !== undefined && { "wap.subject_id": subjectId }),
  });
}

function streamingProcedures(): ReadonlySet<string> {
  const paths = new Set<string>();
  for (const service of platformServices) {
    for (const method of service.methods) {
      if (method.methodKind !== "unary") paths.add(procedureOf(method));
    }
  }
  return paths;
}

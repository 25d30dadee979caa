/**
 * Admits the caller of a daemon stream (control or session): the edge's refusals first, then the
 * stream's declared access, checked by the platform (only an enrolled daemon signing the request).
 *
 * @module
 */
import type { DescMethodBiDiStreaming } from "@bufbuild/protobuf";
import type { DaemonCaller } from "@wap/core";
import { callContextOf, type EdgeRequest, type EdgeSettings } from "../edge.js";

/** The daemon opening `method`, or the refusal to answer with. */
export async function admitDaemon(
  settings: EdgeSettings,
  edge: EdgeRequest,
  method: DescMethodBiDiStreaming,
  signal: AbortSignal,
): Promise<DaemonCaller> {
  const ctx = callContextOf(edge, settings, method, signal);
  await settings.platform.openStream(method, ctx);
  const caller = ctx.caller;
  // The access declared for daemon streams admits daemons only.
  if (caller.kind !== "daemon") throw new Error(`${method.name} admitted a ${caller.kind}`);
  return caller;
}

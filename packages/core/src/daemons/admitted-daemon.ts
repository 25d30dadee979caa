/**
 * The daemon a daemon stream runs for: the access declared for those streams (`signed_daemon`)
 * admits daemons only, so any other caller here is a wiring bug, not a refusal.
 *
 * @module
 */
import type { CallContext, DaemonCaller } from "../context.js";

export function admittedDaemon(ctx: CallContext, stream: string): DaemonCaller {
  const caller = ctx.caller;
  if (caller.kind !== "daemon") throw new Error(`the ${stream} admitted a ${caller.kind}`);
  return caller;
}

/**
 * What core does when a daemon's control stream (DaemonControlService.Connect) opens and closes;
 * the stream itself (control-stream.ts) uses it this way:
 *
 * 1. Subscribe to `daemonTopic(id)` BEFORE calling {@link openControlStream}, so that nothing
 *    published after the daemon is marked online is missed. Do not wait for a first client
 *    message.
 * 2. Send the `greeting` messages, then, for each event on the topic, `toConnectResponse`
 *    (`deleted` ends the stream). Answer each `heartbeat` with `heartbeatAck`.
 * 3. When the stream ends for any reason, call {@link closeControlStream} with the same holder.
 *
 * `holder` names the instance and the stream (`<instanceId>/<streamId>`): a daemon that
 * reconnects to another instance before the old stream is noticed closed stays online
 * (online means a stream is open, on any instance). An instance releases what it
 * held with `storage.daemons.releaseHolders("<instanceId>/")` when it starts and stops.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectResponseSchema } from "@wap/api";
import type { DaemonCaller } from "../context.js";
import { UnauthenticatedError } from "../errors.js";
import type { Services } from "../operations/services.js";
import type { DaemonRecord } from "../storage/daemons.js";
import { toConnectResponse } from "./events.js";

export type ConnectResponseInit = MessageInitShape<typeof ConnectResponseSchema>;

/** An acknowledgement of a heartbeat; also a harmless keepalive (the agent ignores it). */
export const heartbeatAck: ConnectResponseInit = { msg: { case: "heartbeatAck", value: {} } };

/**
 * Marks the daemon online on `holder` and returns what to send at once: a rejected daemon hears
 * `STATUS REJECTED` on every connection; others nothing (the daemon syncs after
 * every reconnect anyway).
 */
export async function openControlStream(
  services: Services,
  caller: DaemonCaller,
  holder: string,
): Promise<{ readonly daemon: DaemonRecord; readonly greeting: readonly ConnectResponseInit[] }> {
  const daemon = await services.storage.daemons.findById(caller.workspaceId, caller.daemonId);
  if (!daemon)
    throw new UnauthenticatedError("this daemon is no longer enrolled", { reason: "DAEMON_DELETED" });
  await services.storage.daemons.setOnline(daemon.id, holder, services.clock.now());
  const greeting: ConnectResponseInit[] = [];
  if (daemon.status === "rejected") {
    const message = toConnectResponse(daemon.id, {
      kind: "notification",
      eventType: "STATUS",
      status: "REJECTED",
    });
    if (message) greeting.push(message);
  }
  return { daemon, greeting };
}

/** Marks the daemon offline, unless another stream (a reconnect) holds it by now. */
export async function closeControlStream(
  services: Services,
  caller: DaemonCaller,
  holder: string,
): Promise<void> {
  await services.storage.daemons.setOnline(caller.daemonId, null, services.clock.now(), holder);
}

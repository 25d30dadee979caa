/**
 * Agent daemons, their control streams and the leases of the server instances holding them
 * (`daemons`, `server_instances`).
 *
 * @module
 */
import type { Page, PageRequest, Patch } from "./common.js";

export type DaemonStatusValue = "pending" | "accepted" | "rejected";

export interface DaemonRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string | null;
  readonly name: string;
  readonly status: DaemonStatusValue;
  readonly recordSessions: boolean;
  /** SSH logins end when they cannot be registered or recorded (fail closed); false when absent. */
  readonly requireRecording?: boolean;
  readonly metadata: Readonly<Record<string, string>>;
  /** PEM SPKI of the key the daemon signs its requests with. */
  readonly authPublicKey: string;
  readonly authMethod: string;
  /** When a control stream was last seen open; null when offline. */
  readonly onlineSince: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface DaemonFilter extends PageRequest {
  /** Case-insensitive substring of the name. */
  readonly query?: string;
  readonly online?: boolean;
  readonly status?: DaemonStatusValue;
}

/** What a daemon reported in its last SyncDaemon, and what it was told. */
export interface DaemonSyncRecord {
  /** Local accounts the daemon reported, as sent. */
  readonly users: readonly string[];
  /** The username -> subject ids map the last SyncDaemon answered with (empty while not accepted). */
  readonly principals: Readonly<Record<string, readonly string[]>>;
  /** When the daemon last synced; null before its first sync. */
  readonly syncedAt: Date | null;
}

/** A daemon whose control stream a holder has, as {@link DaemonProtocolQueries.listHolders} reads it. */
export interface DaemonHolderRecord {
  readonly daemonId: string;
  readonly holder: string;
}

/**
 * What the daemon protocol adds to the daemons repository. The online queries never change
 * `updatedAt`: being connected is not an edit of the daemon.
 *
 * Online rule (docs/daemons.md): a holder is `<instanceId>/<streamId>`, and a server instance
 * counts only while its lease (migration 007) is live. Each instance renews its lease well within
 * its length; any instance may release the holders of instances whose lease has lapsed (a crash,
 * a partition), so no daemon stays online for longer than a lease after its instance died.
 */
export interface DaemonProtocolQueries {
  /** By id alone, for request authentication (the workspace is not known yet). */
  findForAuthentication(id: string): Promise<DaemonRecord | null>;
  /** The workspace's daemon registered with this public key (PEM as stored), or null. */
  findByPublicKey(workspaceId: string, authPublicKey: string): Promise<DaemonRecord | null>;
  /**
   * Records that a control stream of the daemon is open on `holder` (`onlineSince = at`), or,
   * with `holder` null, that none is. `holder` names the server instance and stream, so that
   * when a daemon reconnects to another instance before the old stream is noticed closed, the
   * old instance's "offline" (`ifHeldBy` = its own holder) does not undo the new "online".
   * With `ifHeldBy` null, only a daemon nobody holds is taken (an instance restating a stream
   * of its own without taking the daemon from a newer stream elsewhere).
   * Returns false when nothing changed (unknown daemon, or held by someone else).
   */
  setOnline(id: string, holder: string | null, at: Date, ifHeldBy?: string | null): Promise<boolean>;
  /** Who holds the daemon's control stream, or null when it is offline. */
  onlineHolder(id: string): Promise<string | null>;
  /**
   * Marks offline every daemon whose stream a holder starting with `holderPrefix` held (an
   * instance starting up or shutting down releases what it held). Returns how many.
   */
  releaseHolders(holderPrefix: string): Promise<number>;
  /** The daemons held by holders starting with `holderPrefix` (an instance checking its own). */
  listHolders(holderPrefix: string): Promise<DaemonHolderRecord[]>;
  /**
   * Extends the lease of server instance `instanceId` to `expiresAt` when it is still live at
   * `now`, and returns true. Otherwise (a new instance, or one whose lease lapsed and whose
   * holders may have been released already) establishes the lease anew and returns false: the
   * instance must then restate the streams it holds.
   */
  renewInstanceLease(instanceId: string, expiresAt: Date, now: Date): Promise<boolean>;
  /**
   * Marks offline every daemon whose holder's instance has no lease live at `now` (lapsed or
   * unknown), then forgets the lapsed leases. Returns how many daemons it released.
   */
  releaseLapsedInstances(now: Date): Promise<number>;
  /** Forgets an instance's lease (it is stopping; release its holders first). */
  removeInstance(instanceId: string): Promise<void>;
  /** Stores what a SyncDaemon reported and answered. */
  recordSync(workspaceId: string, id: string, sync: DaemonSyncRecord): Promise<void>;
  /** The last sync, or null for an unknown daemon. */
  findSync(workspaceId: string, id: string): Promise<DaemonSyncRecord | null>;
}

export interface DaemonRepository extends DaemonProtocolQueries {
  insert(daemon: DaemonRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<DaemonRecord | null>;
  list(workspaceId: string, filter: DaemonFilter): Promise<Page<DaemonRecord>>;
  update(
    workspaceId: string,
    id: string,
    patch: Patch<
      DaemonRecord,
      "status" | "recordSessions" | "requireRecording" | "metadata" | "name" | "targetId" | "onlineSince"
    >,
    updatedAt: Date,
  ): Promise<DaemonRecord | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

/**
 * The daemon-protocol half of the storage port: the workspace enrolment token, what the daemon
 * protocol adds to daemons (lookup by id or key, who holds the control stream, the last sync),
 * and terminal sessions with the instance relaying each. Part of {@link Repositories}; kept in its
 * own file because these tables move with the daemon protocol (migrations 006 to 008).
 *
 * @module
 */
import type { DaemonRecord } from "./records.js";

/** The workspace's one enrolment token. Only the SHA-256 of the token is kept. */
export interface EnrollTokenRecord {
  /** One token per workspace. */
  readonly workspaceId: string;
  /** SHA-256 of the token, hex; unique. */
  readonly tokenHash: string;
  /** Who minted it (`actorOf` id). */
  readonly createdBy: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface EnrollTokenRepository {
  /** Stores the token, replacing the workspace's previous one (which stops working). */
  replace(token: EnrollTokenRecord): Promise<void>;
  find(workspaceId: string): Promise<EnrollTokenRecord | null>;
  /** By token, across workspaces: the token is all a daemon has. Expired tokens are returned too. */
  findByTokenHash(tokenHash: string): Promise<EnrollTokenRecord | null>;
  delete(workspaceId: string): Promise<boolean>;
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

export type DaemonSessionState = "pending" | "open" | "closed";

/** A web-terminal session on a daemon. */
export interface DaemonSessionRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly daemonId: string;
  /** The subject the session runs for (a user id, or a service-account id). */
  readonly userId: string;
  /** The Unix account on the daemon's machine. */
  readonly username: string;
  readonly state: DaemonSessionState;
  readonly createdAt: Date;
  /** When the daemon's session stream claimed it (`ready`). */
  readonly openedAt: Date | null;
  readonly closedAt: Date | null;
  /** Why it ended; empty while it has not. */
  readonly closeReason: string;
}

/**
 * Where an open session is relayed: the server instance holding its daemon's session stream
 * (migration 008). Browsers attaching through another instance are forwarded there.
 */
export interface SessionRelayRecord {
  /** The instance's id; it relays while its lease (migration 007, `renewInstanceLease`) is live. */
  readonly instanceId: string;
  /** The base URL other instances reach it at, e.g. `http://10.0.0.5:8080`. */
  readonly url: string;
}

/** A session as a browser waiting to attach reads it. */
export interface SessionRelayState {
  readonly state: DaemonSessionState;
  readonly createdAt: Date;
  /** Why it ended; empty while it has not. */
  readonly closeReason: string;
  /** Who relays it; null while pending, and for a session claimed without a relay. */
  readonly relay: SessionRelayRecord | null;
}

export interface DaemonSessionRepository {
  insert(session: DaemonSessionRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<DaemonSessionRecord | null>;
  /** The workspace's sessions in these states, oldest first. */
  listInWorkspace(workspaceId: string, states: readonly DaemonSessionState[]): Promise<DaemonSessionRecord[]>;
  /** The daemon's sessions in these states, oldest first. */
  listByDaemon(
    workspaceId: string,
    daemonId: string,
    states: readonly DaemonSessionState[],
  ): Promise<DaemonSessionRecord[]>;
  /**
   * Moves the daemon's pending session created at or after `createdSince` to open, relayed by
   * `relay` when given. Returns the opened record to exactly one caller even when many race;
   * null for another daemon's, an unknown, an older (abandoned) or an already claimed session.
   */
  open(
    daemonId: string,
    id: string,
    at: Date,
    createdSince: Date,
    relay?: SessionRelayRecord,
  ): Promise<DaemonSessionRecord | null>;
  /**
   * The session's state and relay, in the workspace; null for an unknown session or another
   * workspace's.
   */
  findRelay(workspaceId: string, id: string): Promise<SessionRelayState | null>;
  /**
   * Closes open sessions relayed by an instance with no lease live at `now` (it stopped or
   * died, and its streams with it) with `reason`, at most `limit` of them, and returns them.
   * Sessions opened without a relay are left alone.
   */
  closeOrphaned(now: Date, reason: string, at: Date, limit: number): Promise<DaemonSessionRecord[]>;
  /**
   * Closes a pending or open session with `reason`. Returns the closed record to exactly one
   * caller; null when it is unknown or already closed.
   */
  close(workspaceId: string, id: string, reason: string, at: Date): Promise<DaemonSessionRecord | null>;
  /**
   * Closes every pending session created before `createdBefore` (nobody claimed it in time)
   * with `reason`, at most `limit` of them, and returns them.
   */
  abandonPending(
    createdBefore: Date,
    reason: string,
    at: Date,
    limit: number,
  ): Promise<DaemonSessionRecord[]>;
  /** Closes every pending or open session of the daemon with `reason`; returns them. */
  closeAllForDaemon(
    workspaceId: string,
    daemonId: string,
    reason: string,
    at: Date,
  ): Promise<DaemonSessionRecord[]>;
}

/** The daemon-protocol repositories; part of every `Repositories`. */
export interface DaemonProtocolRepositories {
  readonly enrollTokens: EnrollTokenRepository;
  readonly daemonSessions: DaemonSessionRepository;
}

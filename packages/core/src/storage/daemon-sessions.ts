/**
 * Web-terminal sessions on daemons and the instance relaying each (`daemon_sessions`).
 *
 * @module
 */

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

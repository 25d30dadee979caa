/**
 * The daemon-protocol half of the storage port: the workspace enrolment token, what the daemon
 * protocol adds to daemons (lookup by id or key, who holds the control stream, the last sync),
 * and terminal sessions. Part of {@link Repositories}; kept in its own file because these
 * tables move with the daemon protocol (migration 006).
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

/**
 * What the daemon protocol adds to the daemons repository. `setOnline` and `releaseInstance`
 * never change `updatedAt`: being connected is not an edit of the daemon.
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
   * Returns false when nothing changed (unknown daemon, or held by someone else).
   */
  setOnline(id: string, holder: string | null, at: Date, ifHeldBy?: string): Promise<boolean>;
  /** Who holds the daemon's control stream, or null when it is offline. */
  onlineHolder(id: string): Promise<string | null>;
  /**
   * Marks offline every daemon whose stream a holder starting with `holderPrefix` held (an
   * instance starting up or shutting down releases what it held). Returns how many.
   */
  releaseHolders(holderPrefix: string): Promise<number>;
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

export interface DaemonSessionRepository {
  insert(session: DaemonSessionRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<DaemonSessionRecord | null>;
  /** The daemon's sessions in these states, oldest first. */
  listByDaemon(
    workspaceId: string,
    daemonId: string,
    states: readonly DaemonSessionState[],
  ): Promise<DaemonSessionRecord[]>;
  /**
   * Moves the daemon's pending session created at or after `createdSince` to open. Returns the
   * opened record to exactly one caller even when many race; null for another daemon's, an
   * unknown, an older (abandoned) or an already claimed session.
   */
  open(daemonId: string, id: string, at: Date, createdSince: Date): Promise<DaemonSessionRecord | null>;
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

/**
 * SSH logins made through sshd with a platform certificate, as the daemon's agent registers
 * them (`ssh_sessions`, migration 017): who, where, what, how it ended.
 *
 * @module
 */

export type SshSessionKind = "shell" | "exec" | "subsystem";

/** One SSH login. Live while `endedAt` is null. */
export interface SshSessionRecord {
  readonly id: string;
  readonly workspaceId: string;
  readonly daemonId: string;
  /** The user or service account the certificate was issued to. */
  readonly subjectId: string;
  readonly subjectType: "user" | "service_account";
  /** The local account sshd logged the subject in as. */
  readonly username: string;
  /** The authority that signed the certificate, and its serial (decimal) and key id. */
  readonly caId: string;
  readonly certificateSerial: string;
  readonly keyId: string;
  /** `ip:port` of the client, as sshd saw it. */
  readonly clientAddress: string;
  readonly kind: SshSessionKind;
  /** exec: the command line; subsystem: its name; shell: empty. */
  readonly command: string;
  readonly tty: boolean;
  /** Whether the daemon recorded sessions when the login began. */
  readonly recorded: boolean;
  readonly startedAt: Date;
  readonly endedAt: Date | null;
  /** The command's exit status; null while live, and when it ended by a signal or is unknown. */
  readonly exitStatus: number | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Who ended it: `user:<id>`, `service_account:<id>`, `system:<why>` or `daemon`; empty while live. */
  readonly endedBy: string;
  readonly endReason: string;
}

/** How a login ended. */
export interface SshSessionEnd {
  readonly at: Date;
  readonly exitStatus: number | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly endedBy: string;
  readonly reason: string;
}

export interface SshSessionRepository {
  insert(session: SshSessionRecord): Promise<void>;
  findById(workspaceId: string, id: string): Promise<SshSessionRecord | null>;
  /** The daemon's live logins, oldest first. */
  listLiveByDaemon(workspaceId: string, daemonId: string): Promise<SshSessionRecord[]>;
  /**
   * Ends a live login. Returns the ended record to exactly one caller even when many race; null
   * when it is unknown, another workspace's or already ended (the first end wins).
   */
  end(workspaceId: string, id: string, end: SshSessionEnd): Promise<SshSessionRecord | null>;
}

/**
 * Per-workspace quotas: anyone may create a workspace, so nothing a workspace holds may grow
 * without bound. Each quota is a platform setting (the server's `WAP_WORKSPACE_MAX_*`), checked
 * in the transaction that adds the thing it counts; past it the call is `resource_exhausted`
 * with reason `WORKSPACE_QUOTA` and a message naming the limit and its setting. Defaults and
 * rules: docs/security.md, "Workspace quotas".
 *
 * @module
 */
import { ResourceExhaustedError } from "../errors.js";
import type { DaemonSessionRecord } from "../storage/daemon-sessions.js";
import type { Repositories } from "../storage/storage.js";

/** The quota settings, part of `PlatformConfig`. */
export interface WorkspaceQuotaConfig {
  /** Daemons (enrolled or pending) per workspace. Default 100. */
  readonly workspaceMaxDaemons: number;
  /** Targets per workspace, a daemon's own included. Default 1000. */
  readonly workspaceMaxTargets: number;
  /** Service accounts per workspace. Default 100. */
  readonly workspaceMaxServiceAccounts: number;
  /** Total size of a workspace's session recordings. Default 10 GiB. */
  readonly workspaceMaxRecordingBytes: number;
  /** Terminal sessions pending or open at once per workspace. Default 100. */
  readonly workspaceMaxOpenSessions: number;
}

export const defaultWorkspaceQuotaConfig: WorkspaceQuotaConfig = {
  workspaceMaxDaemons: 100,
  workspaceMaxTargets: 1000,
  workspaceMaxServiceAccounts: 100,
  workspaceMaxRecordingBytes: 10 * 1024 ** 3,
  workspaceMaxOpenSessions: 100,
};

/** What each quota counts, how its setting is named, and how to count it. */
const quotas = {
  daemons: {
    setting: "workspaceMaxDaemons",
    env: "WAP_WORKSPACE_MAX_DAEMONS",
    what: "daemons",
    count: async (tx: Repositories, workspaceId: string) =>
      (await tx.daemons.list(workspaceId, { limit: 1, offset: 0 })).total,
  },
  targets: {
    setting: "workspaceMaxTargets",
    env: "WAP_WORKSPACE_MAX_TARGETS",
    what: "targets",
    count: async (tx: Repositories, workspaceId: string) =>
      (await tx.targets.list(workspaceId, { limit: 1, offset: 0 })).total,
  },
  serviceAccounts: {
    setting: "workspaceMaxServiceAccounts",
    env: "WAP_WORKSPACE_MAX_SERVICE_ACCOUNTS",
    what: "service accounts",
    count: async (tx: Repositories, workspaceId: string) =>
      (await tx.serviceAccounts.list(workspaceId, { limit: 1, offset: 0 })).total,
  },
  recordingBytes: {
    setting: "workspaceMaxRecordingBytes",
    env: "WAP_WORKSPACE_MAX_RECORDING_BYTES",
    what: "bytes of session recordings",
    count: recordingBytesOf,
  },
} as const;

export type CountedQuota = keyof typeof quotas;

/** The total size of the workspace's recordings. */
export async function recordingBytesOf(tx: Repositories, workspaceId: string): Promise<number> {
  return (await tx.recordings.list(workspaceId, { limit: 1, offset: 0 })).totalBytes;
}

function exhausted(limit: number, what: string, setting: string, env: string): ResourceExhaustedError {
  return new ResourceExhaustedError(
    `the workspace has reached its limit of ${limit} ${what} (${setting}, server setting ${env}); ` +
      "remove some or ask the operator to raise the limit",
    { reason: "WORKSPACE_QUOTA" },
  );
}

/** Refuses, with `resource_exhausted`, to add `adding` more of `quota` to a workspace at its limit. */
export async function assertWithinQuota(
  tx: Repositories,
  config: WorkspaceQuotaConfig,
  workspaceId: string,
  quota: CountedQuota,
  adding = 1,
): Promise<void> {
  const { setting, env, what, count } = quotas[quota];
  const limit = config[setting];
  if ((await count(tx, workspaceId)) + adding > limit) throw exhausted(limit, what, setting, env);
}

/** Refuses a new session when the workspace has as many live ones as it may. */
export function assertOpenSessionRoom(
  config: WorkspaceQuotaConfig,
  live: readonly DaemonSessionRecord[],
): void {
  const limit = config.workspaceMaxOpenSessions;
  if (live.length >= limit) {
    throw exhausted(
      limit,
      "open terminal sessions",
      "workspaceMaxOpenSessions",
      "WAP_WORKSPACE_MAX_OPEN_SESSIONS",
    );
  }
}

/**
 * DaemonService.SyncDaemon: the daemon reports its local users, addresses and metadata, and gets
 * back its status, config and the complete `username -> subject ids` map it must enforce
 * (docs/agent-protocol.md).
 *
 * - The request carries no ids: the daemon, its workspace and target come from the credentials.
 * - `privateIps` are `ip:port` strings; an address without a port gets the SSH default 22 (the
 *   daemon always sends its embedded sshd's port, 4022 by default). While the target has no
 *   endpoints (the daemon's first report), the report becomes them (an administrator approves it
 *   by accepting the daemon), except addresses another target of the workspace claims. Any report
 *   that differs from the target's endpoints after that only waits in `reportedEndpoints` for an
 *   administrator (UpdateTarget): host certificates name approved endpoints only
 *   (targets/host-names.ts). `metadata` replaces the daemon's and the target's metadata.
 * - The map lists, for each principal of the target, the user ids granted directly or through a
 *   team and the service-account ids. It is what the daemon then enforces, so it is stored as
 *   "last sent" (CreateSession pushes only pairs the daemon has).
 * - PENDING and REJECTED daemons get no principals (the agent applies
 *   whatever it is given). A rejected daemon's report is not stored. The status is always set,
 *   ACCEPTED explicitly.
 * - A report that changes the daemon's metadata or its target's endpoints or metadata is audited
 *   (`daemon.sync`, actor the daemon); one that changes nothing writes no entry.
 *
 * @module
 */
import { DaemonService } from "@wap/api";
import * as z from "zod";
import { claimedByOtherTargets, claimedEndpoint, sameEndpoints } from "../certificates/host-names.js";
import { UnauthenticatedError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import { certificatePrincipalsOf } from "../principals/certificate-principals.js";
import { loginsOf } from "../principals/subjects.js";
import type { Repositories } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";
import { endpointLimits } from "../validation/bounds.js";
import { parseEndpoint } from "../validation/endpoint.js";
import { text } from "../validation/rules.js";
import { statusToWire } from "./operations.js";
import { auditRefusals, refusedCertificatesInput } from "./refused-certificates.js";

/** Our own bounds where the contract sets none, so no report can make a row unbounded. */
export const syncLimits = {
  users: 256,
  userLength: 256,
  endpoints: endpointLimits.count,
  endpointLength: endpointLimits.length,
  metadataEntries: 64,
  metadataKeyLength: 64,
  metadataValueLength: 1024,
} as const;

/** The port an address without one is reached on. */
export const defaultSshPort = 22;

/** `ip:port` (IPv6 in brackets) from `ip`, `ip:port`, `[ip6]` or `[ip6]:port`; null if it is none. */
export function normalizeEndpoint(value: string): string | null {
  const parts = parseEndpoint(value);
  if (parts === null || parts.kind === "hostname") return null;
  const port = parts.port ?? defaultSshPort;
  return parts.kind === "ipv6" ? `[${parts.host}]:${port}` : `${parts.host}:${port}`;
}

const endpoint = text({ min: 1, max: syncLimits.endpointLength }).transform((value, ctx) => {
  const normalized = normalizeEndpoint(value);
  if (normalized === null) {
    ctx.addIssue({ code: "custom", message: "must be an IP address with an optional port (ip:port)" });
    return z.NEVER;
  }
  return normalized;
});

const metadata = z
  .record(text({ min: 1, max: syncLimits.metadataKeyLength }), text({ max: syncLimits.metadataValueLength }))
  .refine((map) => Object.keys(map).length <= syncLimits.metadataEntries, {
    message: `at most ${syncLimits.metadataEntries} entries`,
  });

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);
const sameMap = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) =>
  sameList(Object.keys(a).sort(), Object.keys(b).sort()) && Object.keys(a).every((k) => a[k] === b[k]);

/**
 * The `username -> ids` map of a target at `at`, usernames sorted, ids in grant order, then the
 * requesters of the access requests approved for it then.
 */
export async function principalMapOf(
  repos: Repositories,
  workspaceId: string,
  targetId: string,
  at: Date,
): Promise<Map<string, string[]>> {
  const principals = await repos.principals.listByTargets(workspaceId, [targetId]);
  const logins = await loginsOf(repos, workspaceId, principals, at);
  // An approved access request lets its requester in as its login during its window.
  for (const request of await repos.accessRequests.activeOn(workspaceId, targetId, at)) {
    const ids = logins.get(request.login);
    if (ids && !ids.includes(request.requesterId)) ids.push(request.requesterId);
  }
  return new Map([...logins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * What a report of `endpoints` changes on `target`: while the target has none (the daemon's first
 * report), the endpoints no other target claims become the target's; otherwise a report that
 * differs from the target's endpoints waits for approval.
 */
async function reportedEndpointsPatch(
  tx: Repositories,
  target: TargetRecord,
  endpoints: readonly string[],
): Promise<Partial<Pick<TargetRecord, "endpoints" | "reportedEndpoints">>> {
  const waiting = target.reportedEndpoints ?? [];
  if (target.endpoints.length === 0) {
    const claimed = await claimedByOtherTargets(tx, target.workspaceId, target.id);
    const adopted = endpoints.filter((endpoint) => !claimedEndpoint(endpoint, claimed));
    const rest = sameEndpoints(adopted, endpoints) ? [] : [...endpoints];
    if (adopted.length === 0 && sameEndpoints(rest, waiting)) return {};
    return { endpoints: adopted, reportedEndpoints: rest };
  }
  const pending = sameEndpoints(target.endpoints, endpoints) ? [] : [...endpoints];
  return sameEndpoints(pending, waiting) ? {} : { reportedEndpoints: pending };
}

export const syncDaemon = defineOperation({
  method: DaemonService.method.syncDaemon,
  access: { kind: "caller", callers: ["daemon"] },
  input: z.object({
    users: z
      .array(text({ min: 1, max: syncLimits.userLength }))
      .max(syncLimits.users, `at most ${syncLimits.users} users`),
    privateIps: z.array(endpoint).max(syncLimits.endpoints, `at most ${syncLimits.endpoints} addresses`),
    metadata,
    refusedCertificates: refusedCertificatesInput,
  }),
  async run({ input, services, now, ctx, audit }) {
    if (ctx.caller.kind !== "daemon") throw new UnauthenticatedError("this call is for daemons");
    const { daemonId, workspaceId } = ctx.caller;
    const endpoints = [...new Set(input.privateIps)];
    const result = await services.storage.transaction(async (tx) => {
      const daemon = await tx.daemons.findById(workspaceId, daemonId);
      if (!daemon)
        throw new UnauthenticatedError("this daemon is no longer enrolled", { reason: "DAEMON_DELETED" });
      if (daemon.status === "rejected") return { daemon, principals: new Map<string, string[]>() };
      let changed = false;
      if (!sameMap(daemon.metadata, input.metadata)) {
        await tx.daemons.update(workspaceId, daemonId, { metadata: input.metadata }, now);
        changed = true;
      }
      const target =
        daemon.targetId === null ? null : await tx.targets.findById(workspaceId, daemon.targetId);
      if (target) {
        const patch = {
          ...(await reportedEndpointsPatch(tx, target, endpoints)),
          ...(!sameMap(target.metadata, input.metadata) && { metadata: input.metadata }),
        };
        if (Object.keys(patch).length > 0) {
          await tx.targets.update(workspaceId, target.id, patch, now);
          changed = true;
        }
      }
      // A report that changes what others see of the daemon or its target is audited; the
      // periodic report that changes nothing is not (it would flood the log).
      if (changed) await audit(tx, { action: "daemon.sync", resource: `daemon:${daemonId}`, workspaceId });
      if (target) await auditRefusals(tx, audit, target, input.refusedCertificates);
      const principals =
        daemon.status === "accepted" && target
          ? await principalMapOf(tx, workspaceId, target.id, now)
          : new Map<string, string[]>();
      await tx.daemons.recordSync(workspaceId, daemonId, {
        users: input.users,
        principals: Object.fromEntries(principals),
        syncedAt: now,
      });
      // What the daemon enforces names each grant's certificate principal; what is stored, and what
      // sessions compare with, stays the subject ids.
      const enforced =
        target === null || principals.size === 0
          ? principals
          : await certificatePrincipalsOf(tx, workspaceId, target.id, principals, now);
      return { daemon, principals: enforced };
    });
    return {
      status: statusToWire[result.daemon.status],
      config: {
        recordSessions: result.daemon.recordSessions,
        requireRecording: result.daemon.requireRecording ?? false,
      },
      principals: [...result.principals].map(([username, ids]) => ({ username, ids })),
    };
  },
});

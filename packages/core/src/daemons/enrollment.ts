/**
 * DaemonService enrolment: the workspace enrolment token and EnrollDaemon.
 *
 * - RefreshEnrollToken mints the workspace's token (256 random bits, prefixed `wapenr_`; only its
 *   SHA-256 is stored), valid for the workspace's `enrollExpiry`; the previous token stops
 *   working. It is returned once. RevokeEnrollToken ends it. Any number of daemons may enrol
 *   with one token until it expires.
 * - EnrollDaemon is public: the token it carries is its credential. It registers the daemon's
 *   P-256 key (stored as canonical PEM, committed before the answer: the daemon signs its next
 *   call with it), creates its target (named from the `Platform-Daemon-Hostname` header, which
 *   the transport passes in `ctx.headers`) trusting the named SSH authority or the workspace
 *   default, and starts PENDING unless the workspace auto-approves.
 * - Re-enrolment: a caller that authenticated as a daemon gets
 *   `already_exists`, whatever its token (the daemon keeps its local state). An unauthenticated
 *   request with the key of a pending or accepted daemon of the token's workspace gets that
 *   daemon's identity back (the key proves nothing without its private half, and the ids are
 *   useless without it); with the key of a rejected daemon it is refused with
 *   `failed_precondition` (delete the daemon first). A deleted daemon is gone: its key enrols
 *   as a new daemon.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DaemonService } from "@wap/api";
import * as z from "zod";
import { hashSecret } from "../auth/service-account-tokens.js";
import { defaultAuthority } from "../certificates/default-authority.js";
import { actorOf } from "../context.js";
import { readP256PublicKey } from "../devices/challenge.js";
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
} from "../errors.js";
import { encodeBase64Url } from "../lib/base64.js";
import { toHex } from "../lib/bytes.js";
import { defineOperation } from "../operations/operation.js";
import type { DaemonRecord } from "../storage/daemons.js";
import { type Repositories, UniqueViolationError } from "../storage/storage.js";
import type { TargetRecord } from "../storage/targets.js";
import { text, uuid } from "../validation/rules.js";
import { assertWithinQuota } from "../workspaces/quotas.js";
import { tokenLifetimes } from "../workspaces/settings.js";
import { nameFromHostname, uniqueTargetName } from "./names.js";
import { statusToWire } from "./operations.js";

const tokenPrefix = "wapenr_";
/** The header that names the machine (docs/agent-protocol.md). */
export const daemonHostnameHeader = "platform-daemon-hostname";
/** The methods a daemon may claim for its key (the daemon's own words; nothing attests them). */
export const daemonAuthMethods = ["tpm", "soft"] as const;
/** Longest PEM we read; a P-256 SPKI PEM is about 180 characters. */
const maxPublicKeyPem = 4096;
/** Enrolments racing for one hostname's name; after the first clash a random suffix spreads them. */
const nameAttempts = 5;

export const refreshEnrollToken = defineOperation({
  method: DaemonService.method.refreshEnrollToken,
  access: { kind: "workspace", permission: "daemons.manage" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ workspace, services, now, audit, ctx }) {
    const token = `${tokenPrefix}${encodeBase64Url(services.random.bytes(32))}`;
    const expiresAt = await services.storage.transaction(async (tx) => {
      const { enrollExpirySeconds } = await tokenLifetimes(tx, workspace.workspaceId);
      const expires = new Date(now.getTime() + enrollExpirySeconds * 1000);
      await tx.enrollTokens.replace({
        workspaceId: workspace.workspaceId,
        tokenHash: hashSecret(token),
        createdBy: actorOf(ctx.caller).actorId,
        createdAt: now,
        expiresAt: expires,
      });
      await tx.workspaces.update(workspace.workspaceId, { enrollExpiresAt: expires }, now);
      await audit(tx, {
        action: "daemon.enroll_token.refresh",
        resource: `workspace:${workspace.workspaceId}`,
      });
      return expires;
    });
    return { token, expiresAt: timestampFromDate(expiresAt) };
  },
});

export const revokeEnrollToken = defineOperation({
  method: DaemonService.method.revokeEnrollToken,
  access: { kind: "workspace", permission: "daemons.manage" },
  input: z.object({ workspaceId: uuid.optional() }),
  async run({ workspace, services, now, audit }) {
    await services.storage.transaction(async (tx) => {
      // Idempotent: revoking when no token is out is not an error.
      await tx.enrollTokens.delete(workspace.workspaceId);
      await tx.workspaces.update(workspace.workspaceId, { enrollExpiresAt: null }, now);
      await audit(tx, {
        action: "daemon.enroll_token.revoke",
        resource: `workspace:${workspace.workspaceId}`,
      });
    });
    return {};
  },
});

/** The key as one canonical PEM, so that the same key always compares equal. */
export function canonicalPublicKey(pem: string): string | null {
  const key = readP256PublicKey(pem);
  if (key === null) return null;
  return key.export({ type: "spki", format: "pem" }).toString();
}

const invalidToken = () =>
  new UnauthenticatedError("the enrolment token is invalid, expired or revoked; ask for a new one", {
    reason: "INVALID_ENROLL_TOKEN",
  });

/**
 * The SSH authority the new target trusts: the one named (by id or by name, as
 * `wap-agent enroll --ca` takes it), else the workspace default.
 */
async function authorityFor(repos: Repositories, workspaceId: string, caId: string): Promise<string> {
  if (caId === "") {
    const fallback = await defaultAuthority(repos, workspaceId, "ssh", {
      reason: "NO_DEFAULT_SSH_CA",
      nameOne: "enrol with `wap-agent enroll --ca <name or id>`",
    });
    return fallback.id;
  }
  const parsed = uuid.safeParse(caId);
  const ca = parsed.success
    ? await repos.certificateAuthorities.findById(workspaceId, parsed.data)
    : ((await repos.certificateAuthorities.list(workspaceId)).find((a) => a.name === caId) ?? null);
  if (!ca) {
    throw new NotFoundError(`the workspace has no certificate authority with the id or name '${caId}'`, {
      reason: "CA_NOT_FOUND",
    });
  }
  if (ca.authorityType !== "ssh") {
    throw new FailedPreconditionError(
      `certificate authority ${caId} is an X.509 authority; daemons need SSH`,
      {
        reason: "CA_NOT_SSH",
      },
    );
  }
  return ca.id;
}

/** A header of the call, whatever the case of its name. */
export function headerOf(
  headers: Readonly<Record<string, string>> | undefined,
  name: string,
): string | undefined {
  if (headers === undefined) return undefined;
  const exact = headers[name];
  if (exact !== undefined) return exact;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

export const enrollDaemon = defineOperation({
  method: DaemonService.method.enrollDaemon,
  access: { kind: "public", signature: "optional" },
  input: z.object({
    token: text({ min: 1, max: 512 }),
    // No uuid rule in the contract: an authority's id or name; "" means the default.
    caId: text({ max: 256 }).optional(),
    authMethod: z.enum(daemonAuthMethods, { message: "must be 'tpm' or 'soft'" }),
    authPubkey: text({ min: 1, max: maxPublicKeyPem, controlCharacters: "allowed" }),
  }),
  async run({ input, services, now, audit, ctx }) {
    // A daemon proving who it is is enrolled already, whatever it sends.
    if (ctx.caller.kind === "daemon") {
      throw new AlreadyExistsError("this daemon is already enrolled", { reason: "DAEMON_ALREADY_ENROLLED" });
    }
    const publicKey = canonicalPublicKey(input.authPubkey);
    if (publicKey === null) {
      throw new InvalidArgumentError("invalid request: authPubkey: must be a PEM ECDSA P-256 public key", {
        violations: [{ field: "authPubkey", description: "must be a PEM ECDSA P-256 public key" }],
      });
    }
    const token = await services.storage.enrollTokens.findByTokenHash(hashSecret(input.token));
    if (!token || token.expiresAt <= now) throw invalidToken();
    const workspaceId = token.workspaceId;
    const baseName = nameFromHostname(headerOf(ctx.headers, daemonHostnameHeader));

    for (let attempt = 1; ; attempt++) {
      try {
        const daemon = await services.storage.transaction(async (tx) => {
          // Checked again inside: a revocation that committed meanwhile wins.
          const live = await tx.enrollTokens.find(workspaceId);
          if (!live || live.tokenHash !== token.tokenHash || live.expiresAt <= now) throw invalidToken();
          const existing = await tx.daemons.findByPublicKey(workspaceId, publicKey);
          if (existing) return reenroll(tx, existing);
          const workspace = await tx.workspaces.findById(workspaceId);
          if (!workspace) throw invalidToken();
          const id = services.random.uuid();
          const base = attempt === 1 ? baseName : `${baseName}-${toHex(services.random.bytes(2))}`;
          const name = await uniqueTargetName(tx, workspaceId, base);
          const target: TargetRecord = {
            id: services.random.uuid(),
            workspaceId,
            caId: await authorityFor(tx, workspaceId, input.caId ?? ""),
            daemonId: id,
            name,
            description: "",
            tags: [],
            endpoints: [],
            metadata: {},
            createdAt: now,
            updatedAt: now,
          };
          const record: DaemonRecord = {
            id,
            workspaceId,
            targetId: target.id,
            name,
            status: workspace.enrollAutoApprove ? "accepted" : "pending",
            recordSessions: false,
            metadata: {},
            authPublicKey: publicKey,
            authMethod: input.authMethod,
            onlineSince: null,
            createdAt: now,
            updatedAt: now,
          };
          await assertWithinQuota(tx, services.config, workspaceId, "daemons");
          await assertWithinQuota(tx, services.config, workspaceId, "targets");
          await tx.targets.insert(target);
          await tx.daemons.insert(record);
          await audit(tx, { action: "daemon.enroll", resource: `daemon:${id}`, workspaceId });
          return record;
        });
        return {
          id: daemon.id,
          workspaceId: daemon.workspaceId,
          targetId: daemon.targetId ?? "",
          status: statusToWire[daemon.status],
          config: { recordSessions: daemon.recordSessions },
        };
      } catch (error) {
        // Another enrolment took the name meanwhile: pick the next free one.
        if (error instanceof UniqueViolationError && attempt < nameAttempts) continue;
        throw error;
      }
    }

    async function reenroll(tx: Repositories, existing: DaemonRecord) {
      if (existing.status === "rejected") {
        throw new FailedPreconditionError(
          `this key belongs to daemon ${existing.id}, which was rejected: an administrator must delete it before the machine can enrol again`,
          { reason: "DAEMON_REJECTED" },
        );
      }
      await audit(tx, { action: "daemon.reenroll", resource: `daemon:${existing.id}`, workspaceId });
      return existing;
    }
  },
});

export const enrollmentOperations = [refreshEnrollToken, revokeEnrollToken, enrollDaemon];

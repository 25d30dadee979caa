/**
 * SSH logins through sshd as sessions of the platform (docs/sessions.md, "SSH logins").
 *
 * The daemon's agent registers every login sshd let in with a platform certificate before the
 * login runs anything (BeginSSHSession), and says how it ended (EndSSHSession). Begin checks,
 * as storage has it now, what sshd checked against the files the agent last wrote:
 * {@link checkSshAccess}. Anything missing is `permission_denied` and the agent ends the login
 * (fail closed). Each begin and end is audited (`ssh_session.start`, `ssh_session.end`); the
 * audit log names the person, the login and the daemon from the stored session.
 *
 * While a login lasts, ssh-enforcement.ts checks it again on every change of access and ends it
 * when the check fails.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DaemonService, SessionKind, type SessionSchema } from "@wap/api";
import { readSshCertificate, sshFingerprintSha256 } from "@wap/ssh-wire";
import { allowlistOf, decideCommand } from "@wap/ssh-wire/extensions";
import * as z from "zod";
import type { DaemonCaller } from "../context.js";
import { daemonTopic, publishCommitted } from "../daemons/events.js";
import { principalMapOf } from "../daemons/sync.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { SshSessionKind, SshSessionRecord } from "../storage/ssh-sessions.js";
import type { Repositories } from "../storage/storage.js";
import { principalUsername } from "../validation/bounds.js";
import { text, timestamp, uuid } from "../validation/rules.js";

/** Bounds of what an agent reports about a login. */
export const sshSessionLimits = {
  certificateLength: 16_384,
  clientAddressLength: 64,
  commandLength: 4096,
  reasonLength: 512,
} as const;

const kindFromWire = new Map<number, SshSessionKind>([
  [SessionKind.SHELL, "shell"],
  [SessionKind.EXEC, "exec"],
  [SessionKind.SUBSYSTEM, "subsystem"],
]);
const kindToWire: Record<SshSessionKind, SessionKind> = {
  shell: SessionKind.SHELL,
  exec: SessionKind.EXEC,
  subsystem: SessionKind.SUBSYSTEM,
};

export function toSshSessionMessage(
  session: SshSessionRecord,
  subjectName = "",
): MessageInitShape<typeof SessionSchema> {
  return {
    sessionId: session.id,
    username: session.username,
    userId: session.subjectId,
    kind: kindToWire[session.kind],
    subjectType: session.subjectType,
    subjectName,
    certificateSerial: session.certificateSerial,
    keyId: session.keyId,
    clientAddress: session.clientAddress,
    command: session.command,
    tty: session.tty,
    startedAt: timestampFromDate(session.startedAt),
    ...(session.endedAt && { endedAt: timestampFromDate(session.endedAt) }),
    ...(session.exitStatus !== null && { exitStatus: session.exitStatus }),
    bytesIn: BigInt(session.bytesIn),
    bytesOut: BigInt(session.bytesOut),
    endedBy: session.endedBy,
    endReason: session.endReason,
  };
}

/** What a login is checked against: who it runs for, as whom, with which certificate. */
export interface SshLogin {
  readonly workspaceId: string;
  readonly subjectId: string;
  readonly subjectType: "user" | "service_account";
  readonly username: string;
  readonly caId: string;
  readonly certificateSerial: string;
}

/**
 * Throws `permission_denied`, with a reason a person reads in the audit log, when `login` may
 * no longer go on as storage has it at `at`: the certificate revoked or expired, the account or
 * service account gone, the person no longer a member, or no grant left for the login on the
 * daemon's target.
 */
export async function checkSshAccess(
  repos: Repositories,
  daemon: DaemonRecord,
  login: SshLogin,
  at: Date,
): Promise<void> {
  const { workspaceId, subjectId, username } = login;
  const certificate = await repos.issuedCertificates.findBySerial(
    workspaceId,
    login.caId,
    login.certificateSerial,
  );
  if (certificate?.kind !== "ssh_user") {
    throw new PermissionDeniedError("the certificate is not one the platform issued", {
      reason: "SSH_CERTIFICATE_UNKNOWN",
    });
  }
  if (certificate.revokedAt) {
    throw new PermissionDeniedError("the certificate was revoked", { reason: "SSH_CERTIFICATE_REVOKED" });
  }
  if (certificate.validBefore <= at) {
    throw new PermissionDeniedError("the certificate expired", { reason: "SSH_CERTIFICATE_REVOKED" });
  }
  if (login.subjectType === "user") {
    if (!(await repos.users.findById(subjectId))) {
      throw new PermissionDeniedError("the account was deleted", { reason: "NO_LOGIN_GRANT" });
    }
    if (!(await repos.members.find(workspaceId, subjectId))) {
      throw new PermissionDeniedError("the person is no longer a member of the workspace", {
        reason: "NO_LOGIN_GRANT",
      });
    }
  } else {
    const account = await repos.serviceAccounts.findById(workspaceId, subjectId);
    if (!account || (account.expiresAt !== null && account.expiresAt <= at)) {
      throw new PermissionDeniedError("the service account was deleted or expired", {
        reason: "NO_LOGIN_GRANT",
      });
    }
  }
  if (daemon.status !== "accepted" || daemon.targetId === null) {
    throw new PermissionDeniedError(`the daemon is ${daemon.status}`, { reason: "NO_LOGIN_GRANT" });
  }
  const logins = await principalMapOf(repos, workspaceId, daemon.targetId, at);
  if (!logins.get(username)?.includes(subjectId)) {
    throw new PermissionDeniedError(`the grant to log in as '${username}' was removed`, {
      reason: "NO_LOGIN_GRANT",
    });
  }
}

const daemonOf = async (repos: Repositories, caller: DaemonCaller): Promise<DaemonRecord> => {
  const daemon = await repos.daemons.findById(caller.workspaceId, caller.daemonId);
  if (!daemon)
    throw new UnauthenticatedError("this daemon is no longer enrolled", { reason: "DAEMON_DELETED" });
  return daemon;
};

const certificateLine = text({ min: 1, max: sshSessionLimits.certificateLength });

export const beginSshSession = defineOperation({
  method: DaemonService.method.beginSSHSession,
  access: { kind: "caller", callers: ["daemon"] },
  input: z.object({
    certificate: certificateLine,
    username: principalUsername,
    clientAddress: text({ max: sshSessionLimits.clientAddressLength }).optional(),
    kind: z
      .number()
      .refine((value) => kindFromWire.has(value), { message: "must be SHELL, EXEC or SUBSYSTEM" }),
    command: text({ max: sshSessionLimits.commandLength }).optional(),
    tty: z.boolean().optional(),
    offlineId: uuid.optional(),
    startedAt: timestamp.optional(),
    recorded: z.boolean().optional(),
  }),
  async run({ input, services, now, ctx, audit }) {
    if (ctx.caller.kind !== "daemon") throw new UnauthenticatedError("this call is for daemons");
    const caller = ctx.caller;
    const offline = offlineLogin(input, caller.daemonId, now);
    if (offline) {
      const known = await services.storage.sshSessions.findById(caller.workspaceId, offline.id);
      if (known) {
        if (known.daemonId !== caller.daemonId) {
          throw fieldProblem("offlineId", "is already used by another daemon's login");
        }
        return sessionAnswer(known.id, known.recorded, services, caller);
      }
    }
    let certificate: ReturnType<typeof readSshCertificate>;
    try {
      certificate = readSshCertificate(input.certificate);
    } catch (error) {
      throw new PermissionDeniedError(`the login's certificate cannot be read: ${(error as Error).message}`, {
        reason: "SSH_CERTIFICATE_UNKNOWN",
      });
    }
    const storage = services.storage;
    const daemon = await daemonOf(storage, caller);
    if (daemon.status !== "accepted" || daemon.targetId === null) {
      throw new FailedPreconditionError(`daemon ${daemon.id} is ${daemon.status}: it has no logins`, {
        reason: "DAEMON_NOT_ACCEPTED",
      });
    }
    const target = await storage.targets.findById(caller.workspaceId, daemon.targetId);
    if (!target) throw new PermissionDeniedError("the daemon's target is gone", { reason: "NO_LOGIN_GRANT" });
    const serial = certificate.serial.toString();
    const issued = await storage.issuedCertificates.findBySerial(caller.workspaceId, target.caId, serial);
    const keyBlob = Buffer.from(certificate.publicKey.split(" ")[1] ?? "", "base64");
    if (
      certificate.type !== "user" ||
      !issued ||
      issued.keyFingerprint !== sshFingerprintSha256(keyBlob) ||
      issued.keyId !== certificate.keyId ||
      (issued.requesterType !== "user" && issued.requesterType !== "service_account")
    ) {
      throw new PermissionDeniedError(
        "the login's certificate is not one the platform issued for this target",
        {
          reason: "SSH_CERTIFICATE_UNKNOWN",
        },
      );
    }
    // The command list the grant put in the certificate: a shell or another command is refused
    // here, audited, before anything is stored (the agent applies the same rule on its own only
    // when the server cannot be reached).
    const kind = kindFromWire.get(input.kind)!;
    const decision = decideCommand(allowlistOf(certificate), kind === "shell" ? undefined : input.command);
    if (!decision.allowed) {
      const asked = kind === "shell" ? "a shell" : JSON.stringify(input.command ?? "");
      await storage.transaction((tx) =>
        audit(tx, {
          action: "certificate.use_refused",
          resource: `issued_certificate:${issued.id} serial=${serial} target=${target.id} reason=command_not_allowed login=${input.username} asked=${asked}`,
          workspaceId: caller.workspaceId,
        }),
      );
      throw new PermissionDeniedError(decision.message, { reason: "SSH_COMMAND_NOT_ALLOWED" });
    }
    const session: SshSessionRecord = {
      id: offline?.id ?? services.random.uuid(),
      workspaceId: caller.workspaceId,
      daemonId: daemon.id,
      subjectId: issued.requesterId,
      subjectType: issued.requesterType,
      username: input.username,
      caId: target.caId,
      certificateSerial: serial,
      keyId: certificate.keyId,
      clientAddress: input.clientAddress ?? "",
      kind,
      command: input.command ?? "",
      tty: input.tty ?? false,
      recorded: offline ? offline.recorded : daemon.recordSessions,
      startedAt: offline ? offline.startedAt : now,
      endedAt: null,
      exitStatus: null,
      bytesIn: 0,
      bytesOut: 0,
      endedBy: "",
      endReason: "",
    };
    await storage.transaction(async (tx) => {
      // A login held offline happened already: sshd let it in with the files the agent had.
      // It is registered as it was; if it is still live, the check that follows (sshBegun)
      // ends it when its access is gone now.
      if (!offline) await checkSshAccess(tx, daemon, session, now);
      await tx.sshSessions.insert(session);
      await audit(tx, {
        action: "ssh_session.start",
        resource: `ssh_session:${session.id}`,
        workspaceId: caller.workspaceId,
      });
    });
    // The instance holding the daemon's control stream watches the login from now on.
    await publishCommitted(services, [{ topic: daemonTopic(daemon.id), payload: { kind: "sshBegun" } }]);
    return {
      sessionId: session.id,
      record: session.recorded,
      requireRecording: daemon.requireRecording ?? false,
    };
  },
});

/**
 * A login the agent kept on disk while the server could not be reached: its session id, derived
 * from the daemon and the agent's own id for it (so a begin sent again answers the same session,
 * and no daemon can name another's), when it began, and whether the agent recorded it.
 */
function offlineLogin(
  input: { offlineId?: string | undefined; startedAt?: Date | undefined; recorded?: boolean | undefined },
  daemonId: string,
  now: Date,
): { id: string; startedAt: Date; recorded: boolean } | undefined {
  if (input.offlineId === undefined) {
    if (input.startedAt !== undefined || input.recorded !== undefined) {
      throw fieldProblem("offlineId", "is required with startedAt or recorded (a login held offline)");
    }
    return undefined;
  }
  if (input.startedAt === undefined || input.startedAt.getTime() > now.getTime() + clockSkewMs) {
    throw fieldProblem("startedAt", "is required with offlineId, and not in the future");
  }
  const hash = createHash("sha256").update(`ssh-offline:${daemonId}:${input.offlineId}`).digest("hex");
  // A UUID (version 8: custom) from the hash.
  const id = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-8${hash.slice(13, 16)}-${((Number.parseInt(hash[16]!, 16) & 0x3) | 0x8).toString(16)}${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  const startedAt = input.startedAt > now ? now : input.startedAt;
  return { id, startedAt, recorded: input.recorded ?? false };
}

const fieldProblem = (field: string, description: string) =>
  new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
    violations: [{ field, description }],
  });

/** How far ahead of the server's clock an agent's times may be (they are then read as now). */
const clockSkewMs = 5 * 60 * 1000;

async function sessionAnswer(
  sessionId: string,
  recorded: boolean,
  services: { storage: Repositories },
  caller: DaemonCaller,
) {
  const daemon = await daemonOf(services.storage, caller);
  return { sessionId, record: recorded, requireRecording: daemon.requireRecording ?? false };
}

/** Counters as stored: non-negative, at most 2^53 - 1. */
const counter = z
  .bigint()
  .refine((value) => value >= 0n, { message: "must be >= 0" })
  .transform((value) => Number(value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : value));

export const endSshSession = defineOperation({
  method: DaemonService.method.endSSHSession,
  access: { kind: "caller", callers: ["daemon"] },
  input: z.object({
    sessionId: uuid,
    exitStatus: z.number().int().optional(),
    bytesIn: counter.optional(),
    bytesOut: counter.optional(),
    reason: text({ max: sshSessionLimits.reasonLength }).optional(),
    endedAt: timestamp.optional(),
  }),
  async run({ input, services, now, ctx, audit }) {
    if (ctx.caller.kind !== "daemon") throw new UnauthenticatedError("this call is for daemons");
    const caller = ctx.caller;
    if (input.endedAt !== undefined && input.endedAt.getTime() > now.getTime() + clockSkewMs) {
      throw fieldProblem("endedAt", "must not be in the future");
    }
    await services.storage.transaction(async (tx) => {
      const session = await tx.sshSessions.findById(caller.workspaceId, input.sessionId);
      if (!session || session.daemonId !== caller.daemonId) {
        throw new NotFoundError(`session ${input.sessionId} not found`, { reason: "SESSION_NOT_FOUND" });
      }
      // A login the agent held offline ended when it says, within its start and now.
      const at =
        input.endedAt === undefined
          ? now
          : new Date(Math.min(now.getTime(), Math.max(session.startedAt.getTime(), input.endedAt.getTime())));
      const ended = await tx.sshSessions.end(caller.workspaceId, session.id, {
        at,
        exitStatus: input.exitStatus === undefined || input.exitStatus < 0 ? null : input.exitStatus,
        bytesIn: input.bytesIn ?? 0,
        bytesOut: input.bytesOut ?? 0,
        endedBy: "daemon",
        reason: input.reason || "the login ended",
      });
      // Ended already (terminated by the platform): that end, and its entry, stand.
      if (ended) {
        await audit(tx, {
          action: "ssh_session.end",
          resource: `ssh_session:${session.id}`,
          workspaceId: caller.workspaceId,
        });
      }
    });
    return {};
  },
});

export const sshSessionOperations = [beginSshSession, endSshSession];

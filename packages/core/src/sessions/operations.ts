/**
 * DaemonService terminal sessions: CreateSession, ListSessions, CloseSession.
 *
 * CreateSession opens a terminal as the Unix account `username` on a daemon's machine, for the
 * caller (a user, or a service account). It checks, in this order:
 * 1. the daemon exists in the workspace (`not_found`), is ACCEPTED and has an open control
 *    stream (`failed_precondition`: a pending daemon gets no sessions, and a session reaches a
 *    daemon only through its stream);
 * 2. the grants of the daemon's target let the caller log in as `username`
 *    (`permission_denied`), whatever the caller's role: a grant is what opens a login;
 * 3. the daemon was told so at its last sync (it checks the pair against its own
 *    cache and would silently drop the session). If not, the daemon is asked to sync and the
 *    call is `unavailable`: retry in a moment;
 * 4. fewer than {@link maxLiveSessionsPerDaemon} sessions are live on it (the daemon's own cap).
 * The pending session is committed before it is pushed (the daemon opens its session stream
 * within milliseconds), then pushed on `daemon:<id>`; a push that cannot be published closes
 * the session and fails the call.
 *
 * ListSessions lists the live sessions (pending and fresh, or open) of a daemon: browser
 * terminals, then SSH logins through sshd (ssh-sessions.ts). CloseSession ends one: anyone may
 * close their own, `sessions.manage` closes anyone's; both sides of a relay hear `close` on
 * `session:<id>`, and the daemon of an SSH login hears `terminateSession` (the login is ended by
 * the caller, `ended_by` naming them). Closing a closed session is not an error.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { DaemonService, SessionKind, type SessionSchema } from "@wap/api";
import * as z from "zod";
import { type ConditionalPermission, holds } from "../access/conditional.js";
import type { CallContext } from "../context.js";
import { closeEvent, daemonTopic, notify, publishCommitted, terminateEvent } from "../daemons/events.js";
import { principalMapOf } from "../daemons/sync.js";
import {
  FailedPreconditionError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
} from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import type { DaemonSessionRecord } from "../storage/daemon-sessions.js";
import type { DaemonRecord } from "../storage/daemons.js";
import type { Repositories } from "../storage/storage.js";
import { principalUsername } from "../validation/bounds.js";
import { uuid } from "../validation/rules.js";
import { assertOpenSessionRoom, assertWithinQuota } from "../workspaces/quotas.js";
import { isLive } from "./lifecycle.js";
import { toSshSessionMessage } from "./ssh-sessions.js";

/** The daemon refuses more concurrent PTY sessions than this (docs/agent-protocol.md). */
export const maxLiveSessionsPerDaemon = 100;

export function toSessionMessage(session: DaemonSessionRecord): MessageInitShape<typeof SessionSchema> {
  return { sessionId: session.id, username: session.username, userId: session.userId };
}

const daemonNotFound = (id: string) =>
  new NotFoundError(`daemon ${id} not found`, { reason: "DAEMON_NOT_FOUND" });

async function findDaemon(repos: Repositories, workspaceId: string, id: string): Promise<DaemonRecord> {
  const daemon = await repos.daemons.findById(workspaceId, id);
  if (!daemon) throw daemonNotFound(id);
  return daemon;
}

/** The user or service-account id a session runs for. */
function subjectOf(ctx: CallContext): string {
  const caller = ctx.caller;
  if (caller.kind === "user") return caller.userId;
  if (caller.kind === "service_account") return caller.serviceAccountId;
  throw new UnauthenticatedError("a terminal session needs a signed-in user or a service account");
}

async function liveSessions(repos: Repositories, daemon: DaemonRecord, now: Date) {
  const sessions = await repos.daemonSessions.listByDaemon(daemon.workspaceId, daemon.id, [
    "pending",
    "open",
  ]);
  return sessions.filter((s) => isLive(s, now));
}

export const createSession = defineOperation({
  method: DaemonService.method.createSession,
  // Every member may ask; the grants decide (step 2).
  access: { kind: "workspace", permission: "targets.read" },
  input: z.object({ workspaceId: uuid.optional(), daemonId: uuid, username: principalUsername }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const subject = subjectOf(ctx);
    const storage = services.storage;
    const daemon = await findDaemon(storage, workspace.workspaceId, input.daemonId);
    if (daemon.status !== "accepted") {
      throw new FailedPreconditionError(
        `daemon ${daemon.id} is ${daemon.status}: only accepted daemons open sessions`,
        {
          reason: "DAEMON_NOT_ACCEPTED",
        },
      );
    }
    if (daemon.onlineSince === null || daemon.targetId === null) {
      throw new FailedPreconditionError(`daemon ${daemon.id} is offline: it has no open control stream`, {
        reason: "DAEMON_OFFLINE",
      });
    }
    const logins = await principalMapOf(storage, workspace.workspaceId, daemon.targetId, now);
    if (!logins.get(input.username)?.includes(subject)) {
      throw new PermissionDeniedError(`you may not log in as '${input.username}' on daemon ${daemon.id}`, {
        reason: "NO_LOGIN_GRANT",
      });
    }
    const told = await storage.daemons.findSync(workspace.workspaceId, daemon.id);
    if (!told?.principals[input.username]?.includes(subject)) {
      await publishCommitted(services, [notify(daemon.id, "PRINCIPALS")]);
      throw new UnavailableError(
        "the daemon has not picked up this grant yet; it was asked to sync: retry shortly",
        {
          reason: "DAEMON_SYNC_PENDING",
        },
      );
    }
    const session: DaemonSessionRecord = {
      id: services.random.uuid(),
      workspaceId: workspace.workspaceId,
      daemonId: daemon.id,
      userId: subject,
      username: input.username,
      state: "pending",
      createdAt: now,
      openedAt: null,
      closedAt: null,
      closeReason: "",
    };
    await storage.transaction(async (tx) => {
      const open = await tx.daemonSessions.listInWorkspace(workspace.workspaceId, ["pending", "open"]);
      assertOpenSessionRoom(
        services.config,
        open.filter((s) => isLive(s, now)),
      );
      // A recorded session needs room for its recording.
      if (daemon.recordSessions) {
        await assertWithinQuota(tx, services.config, workspace.workspaceId, "recordingBytes");
      }
      if ((await liveSessions(tx, daemon, now)).length >= maxLiveSessionsPerDaemon) {
        throw new ResourceExhaustedError(
          `daemon ${daemon.id} has ${maxLiveSessionsPerDaemon} sessions open, its limit; close one first`,
          { reason: "DAEMON_SESSION_LIMIT" },
        );
      }
      await tx.daemonSessions.insert(session);
      await audit(tx, { action: "session.create", resource: `session:${session.id}` });
    });
    // Committed: now the daemon may be told. Its `ready` finds the session whatever the race.
    try {
      await services.events.publish(daemonTopic(daemon.id), {
        kind: "session",
        sessionId: session.id,
        username: session.username,
        userId: session.userId,
      });
    } catch (cause) {
      await storage.daemonSessions.close(
        workspace.workspaceId,
        session.id,
        "the session could not be pushed",
        now,
      );
      throw new UnavailableError("the session could not be sent to the daemon; retry shortly", { cause });
    }
    return { session: toSessionMessage(session), daemonName: daemon.name };
  },
});

export const listSessions = defineOperation({
  method: DaemonService.method.listSessions,
  access: { kind: "workspace", permission: "sessions.read" },
  input: z.object({ workspaceId: uuid.optional(), daemonId: uuid }),
  async run({ input, workspace, services, now }) {
    const daemon = await findDaemon(services.storage, workspace.workspaceId, input.daemonId);
    const sessions = await liveSessions(services.storage, daemon, now);
    const logins = await services.storage.sshSessions.listLiveByDaemon(workspace.workspaceId, daemon.id);
    const names = new Map<string, string>();
    for (const login of logins) {
      if (names.has(login.subjectId)) continue;
      const named =
        login.subjectType === "user"
          ? await services.storage.users.findById(login.subjectId)
          : await services.storage.serviceAccounts.findById(workspace.workspaceId, login.subjectId);
      names.set(login.subjectId, named?.name ?? "");
    }
    return {
      sessions: [
        ...sessions.map((s) => ({ ...toSessionMessage(s), kind: SessionKind.TERMINAL })),
        ...logins.map((login) => toSshSessionMessage(login, names.get(login.subjectId))),
      ],
      daemonName: daemon.name,
    };
  },
});

/** Closing a session of someone else (one's own needs only `sessions.read`). */
const othersSessions: ConditionalPermission = {
  permission: "sessions.manage",
  when: "to close another subject's session",
};

export const closeSession = defineOperation({
  method: DaemonService.method.closeSession,
  access: { kind: "workspace", permission: "sessions.read", conditions: [othersSessions] },
  input: z.object({ workspaceId: uuid.optional(), daemonId: uuid, sessionId: uuid }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const subject = subjectOf(ctx);
    const reason = "closed from the platform";
    const mayCloseOthers = holds(workspace.role, othersSessions);
    const login = await services.storage.sshSessions.findById(workspace.workspaceId, input.sessionId);
    if (login && login.daemonId === input.daemonId) {
      if (login.subjectId !== subject && !mayCloseOthers) {
        throw new PermissionDeniedError(
          `closing another subject's session needs the ${othersSessions.permission} permission`,
          { reason: "ROLE_LACKS_PERMISSION" },
        );
      }
      const by = ctx.caller.kind === "user" ? `user:${subject}` : `service_account:${subject}`;
      // The person at the other end reads who ended it.
      const closer =
        ctx.caller.kind === "user"
          ? await services.storage.users.findById(subject)
          : await services.storage.serviceAccounts.findById(workspace.workspaceId, subject);
      const endReason = closer ? `${reason} by ${closer.name}` : reason;
      const ended = await services.storage.transaction(async (tx) => {
        const result = await tx.sshSessions.end(workspace.workspaceId, login.id, {
          at: now,
          exitStatus: null,
          bytesIn: login.bytesIn,
          bytesOut: login.bytesOut,
          endedBy: by,
          reason: endReason,
        });
        if (result) await audit(tx, { action: "ssh_session.end", resource: `ssh_session:${login.id}` });
        return result;
      });
      if (ended) await publishCommitted(services, [terminateEvent(login.daemonId, login.id, endReason)]);
      return {};
    }
    const closed = await services.storage.transaction(async (tx) => {
      const session = await tx.daemonSessions.findById(workspace.workspaceId, input.sessionId);
      if (!session || session.daemonId !== input.daemonId) {
        throw new NotFoundError(`session ${input.sessionId} not found`, { reason: "SESSION_NOT_FOUND" });
      }
      const own = session.userId === subject;
      if (!own && !mayCloseOthers) {
        throw new PermissionDeniedError(
          `closing another subject's session needs the ${othersSessions.permission} permission`,
          {
            reason: "ROLE_LACKS_PERMISSION",
          },
        );
      }
      const result = await tx.daemonSessions.close(workspace.workspaceId, session.id, reason, now);
      if (result) await audit(tx, { action: "session.close", resource: `session:${session.id}` });
      return result;
    });
    if (closed) await publishCommitted(services, [closeEvent(closed.id, reason)]);
    return {};
  },
});

export const sessionOperations = [createSession, listSessions, closeSession];

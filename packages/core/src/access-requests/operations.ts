/**
 * AccessRequestService: just-in-time access. A member asks for a target's login for a while,
 * under an on-request grant; approvers named by the grant's policy approve (enough distinct ones)
 * or deny; the requester, an approver or an admin withdraws. Every transition is kept on the
 * request (who, why, when) and audited; the audit entry's workspace event tells approvers, and
 * approvers with a verified address get a mail.
 *
 * @module
 */
import { AccessRequestService, AccessRequestStateSchema } from "@wap/api";
import * as z from "zod";
import { roleAllows } from "../access/permissions.js";
import { accountLink } from "../auth/account-config.js";
import type { Caller } from "../context.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  PlatformError,
} from "../errors.js";
import { sendInBackground } from "../mail/deliver.js";
import { accessRequestMail } from "../mail/templates.js";
import { defineOperation, type WorkspaceScope } from "../operations/operation.js";
import type { Services } from "../operations/services.js";
import { targetNotFound } from "../principals/not-found.js";
import type {
  AccessRequestEventType,
  AccessRequestRecord,
  AccessRequestState,
} from "../storage/access-requests.js";
import type { Repositories } from "../storage/storage.js";
import { approvalLimits, principalUsername } from "../validation/bounds.js";
import { defaultPage, durationSeconds, enumValue, paging, text, uuid } from "../validation/rules.js";
import { approverIdsOf, type CallerActions, stateToWire, toAccessRequestMessage } from "./messages.js";
import { revokeIssuedUnder } from "./revocation.js";
import { approversOf, mayApprove, requestablePolicy, stateAt } from "./rules.js";

const workspaceId = uuid.optional();
const reason = text({ max: 1000 }).optional();
const userCallers = ["user"] as const;

const requestNotFound = (id: string) =>
  new NotFoundError(`access request ${id} not found`, { reason: "ACCESS_REQUEST_NOT_FOUND" });

const invalid = (field: string, description: string) =>
  new InvalidArgumentError(`invalid request: ${field}: ${description}`, {
    violations: [{ field, description }],
  });

function userIdOf(caller: Caller): string {
  // The operations admit users only (their access says so); this narrows the type.
  if (caller.kind !== "user") throw new PermissionDeniedError("access requests are for users");
  return caller.userId;
}

const isAdmin = (workspace: WorkspaceScope) =>
  workspace.role !== null && roleAllows(workspace.role, "access_requests.manage");

/** Whether the caller may see the request: its requester, one who may decide it, or an admin. */
async function visibleTo(
  repos: Repositories,
  workspace: WorkspaceScope,
  userId: string,
  request: AccessRequestRecord,
): Promise<boolean> {
  if (request.requesterId === userId) return true;
  if (isAdmin(workspace)) return true;
  return mayApprove(repos, workspace.workspaceId, userId, workspace.role, request.policy);
}

/**
 * What the caller may do with a request at `at`, by the same rules the decision and withdrawal
 * operations enforce: decide a pending request of someone else that the policy lets them decide
 * and they have not approved yet; withdraw a pending or approved one they may see.
 * `approves` is whether the policy names the caller (asked by the caller once per policy).
 */
function callerActions(
  request: AccessRequestRecord,
  userId: string,
  admin: boolean,
  approves: boolean,
  at: Date,
): CallerActions {
  const state = stateAt(request, at);
  const own = request.requesterId === userId;
  return {
    mayDecide: state === "pending" && !own && approves && !approverIdsOf(request).includes(userId),
    mayWithdraw: (state === "pending" || state === "approved") && (own || admin || approves),
  };
}

/** The request as the wire shows it to `userId`, with what they may do with it. */
async function answerFor(
  repos: Repositories,
  workspace: WorkspaceScope,
  userId: string,
  request: AccessRequestRecord,
  at: Date,
) {
  const approves = await mayApprove(repos, workspace.workspaceId, userId, workspace.role, request.policy);
  return toAccessRequestMessage(
    request,
    at,
    callerActions(request, userId, isAdmin(workspace), approves, at),
  );
}

async function findVisible(
  repos: Repositories,
  workspace: WorkspaceScope,
  userId: string,
  id: string,
): Promise<AccessRequestRecord> {
  const request = await repos.accessRequests.findById(workspace.workspaceId, id);
  if (!request || !(await visibleTo(repos, workspace, userId, request))) throw requestNotFound(id);
  return request;
}

/** The request with one more transition (and the changes that go with it), one version on. */
function transition(
  request: AccessRequestRecord,
  type: AccessRequestEventType,
  actorId: string,
  why: string,
  at: Date,
  changes: Partial<Pick<AccessRequestRecord, "state" | "approvedAt" | "endsAt">> = {},
): AccessRequestRecord {
  return {
    ...request,
    ...changes,
    events: [...request.events, { type, actorId, reason: why, at }],
    version: request.version + 1,
  };
}

async function save(repos: Repositories, request: AccessRequestRecord): Promise<void> {
  if (!(await repos.accessRequests.update(request))) {
    throw new PlatformError("aborted", "the access request changed meanwhile; read it and try again", {
      reason: "ACCESS_REQUEST_CHANGED",
    });
  }
}

/** Refuses a decision on a request that is no longer pending at `at`. */
function expectPending(request: AccessRequestRecord, at: Date): void {
  const state = stateAt(request, at);
  if (state === "expired") {
    throw new FailedPreconditionError(`access request ${request.id} expired undecided`, {
      reason: "ACCESS_REQUEST_EXPIRED",
    });
  }
  if (state !== "pending") {
    throw new FailedPreconditionError(`access request ${request.id} is ${state} already`, {
      reason: "ACCESS_REQUEST_DECIDED",
    });
  }
}

/** Mails the approvers with a verified address; best effort, after the request is stored. */
async function tellApprovers(services: Services, request: AccessRequestRecord): Promise<void> {
  const repos = services.storage;
  const [requester, target] = await Promise.all([
    repos.users.findById(request.requesterId),
    repos.targets.findById(request.workspaceId, request.targetId),
  ]);
  const link = accountLink(services.config, "/access-requests", {
    workspace: request.workspaceId,
    request: request.id,
  });
  for (const id of await approversOf(repos, request.workspaceId, request.policy, request.requesterId)) {
    const user = await repos.users.findById(id);
    if (!user?.emailVerified) continue;
    sendInBackground(
      services,
      accessRequestMail(user.email, link, {
        requester: requester?.username ?? request.requesterId,
        target: target?.name ?? request.targetId,
        login: request.login,
        durationSeconds: request.durationSeconds,
        reason: request.reason,
      }),
    );
  }
}

export const createAccessRequest = defineOperation({
  method: AccessRequestService.method.createAccessRequest,
  access: { kind: "workspace", permission: "access_requests.create", callers: userCallers },
  input: z.object({
    workspaceId,
    targetId: uuid,
    login: principalUsername,
    duration: durationSeconds(approvalLimits.durationSeconds),
    reason,
  }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const userId = userIdOf(ctx.caller);
    const request = await services.storage.transaction(async (tx) => {
      if (!(await tx.targets.findById(workspace.workspaceId, input.targetId)))
        throw targetNotFound(input.targetId);
      const policy = await requestablePolicy(
        tx,
        workspace.workspaceId,
        userId,
        input.targetId,
        input.login,
        now,
      );
      if (input.duration > policy.maxDurationSeconds) {
        throw invalid("duration", `must be at most ${policy.maxDurationSeconds}s, the grant's maximum`);
      }
      const why = input.reason ?? "";
      if (policy.reasonRequired && why.trim() === "") {
        throw invalid("reason", "is required by the grant's approval policy");
      }
      const record: AccessRequestRecord = {
        id: services.random.uuid(),
        workspaceId: workspace.workspaceId,
        targetId: input.targetId,
        login: input.login,
        requesterId: userId,
        reason: why,
        durationSeconds: input.duration,
        state: "pending",
        policy,
        createdAt: now,
        decideBy: new Date(now.getTime() + services.config.accessRequestDecisionSeconds * 1000),
        approvedAt: null,
        endsAt: null,
        events: [{ type: "requested", actorId: userId, reason: why, at: now }],
        version: 1,
      };
      await tx.accessRequests.insert(record);
      await audit(tx, { action: "access_request.create", resource: `access_request:${record.id}` });
      return record;
    });
    await tellApprovers(services, request).catch(() => undefined);
    return { request: await answerFor(services.storage, workspace, userId, request, now) };
  },
});

export const getAccessRequest = defineOperation({
  method: AccessRequestService.method.getAccessRequest,
  access: { kind: "workspace", permission: "access_requests.read", callers: userCallers },
  input: z.object({ workspaceId, id: uuid }),
  async run({ input, workspace, services, now, ctx }) {
    const userId = userIdOf(ctx.caller);
    const request = await findVisible(services.storage, workspace, userId, input.id);
    return { request: await answerFor(services.storage, workspace, userId, request, now) };
  },
});

const stateFromWire = new Map<number, AccessRequestState>(
  Object.entries(stateToWire).map(([name, value]) => [value, name as AccessRequestState]),
);

export const listAccessRequests = defineOperation({
  method: AccessRequestService.method.listAccessRequests,
  access: { kind: "workspace", permission: "access_requests.read", callers: userCallers },
  input: z.object({
    workspaceId,
    ...paging,
    state: enumValue(AccessRequestStateSchema, { definedOnly: true }).optional(),
  }),
  async run({ input, workspace, services, now, ctx }) {
    const userId = userIdOf(ctx.caller);
    const repos = services.storage;
    const wanted = input.state === undefined ? undefined : stateFromWire.get(input.state);
    const admin = isAdmin(workspace);
    // Whether the caller may decide depends only on the policy: asked once per distinct policy.
    const decides = new Map<string, boolean>();
    const approves = async (r: AccessRequestRecord) => {
      const key = JSON.stringify(r.policy);
      let found = decides.get(key);
      if (found === undefined) {
        found = await mayApprove(repos, workspace.workspaceId, userId, workspace.role, r.policy);
        decides.set(key, found);
      }
      return found;
    };
    const kept: Array<{ request: AccessRequestRecord; approves: boolean }> = [];
    for (const r of await repos.accessRequests.listByWorkspace(workspace.workspaceId)) {
      if (wanted !== undefined && stateAt(r, now) !== wanted) continue;
      const approver = await approves(r);
      if (admin || r.requesterId === userId || approver) kept.push({ request: r, approves: approver });
    }
    const limit = input.limit ?? defaultPage.limit;
    const offset = input.offset ?? defaultPage.offset;
    return {
      requests: kept
        .slice(offset, offset + limit)
        .map((k) =>
          toAccessRequestMessage(k.request, now, callerActions(k.request, userId, admin, k.approves, now)),
        ),
      total: kept.length,
    };
  },
});

/** Loads a request the caller may decide, refusing the requester themself. */
async function forDecision(
  repos: Repositories,
  workspace: WorkspaceScope,
  userId: string,
  id: string,
  at: Date,
): Promise<AccessRequestRecord> {
  const request = await findVisible(repos, workspace, userId, id);
  if (request.requesterId === userId) {
    throw new PermissionDeniedError("nobody decides their own access request", { reason: "SELF_APPROVAL" });
  }
  if (!(await mayApprove(repos, workspace.workspaceId, userId, workspace.role, request.policy))) {
    throw new PermissionDeniedError("the grant's approval policy does not let you decide this request", {
      reason: "NOT_AN_APPROVER",
    });
  }
  expectPending(request, at);
  return request;
}

export const approveAccessRequest = defineOperation({
  method: AccessRequestService.method.approveAccessRequest,
  access: { kind: "workspace", permission: "access_requests.decide", callers: userCallers },
  notifiesDaemons: ["access_request_target"],
  input: z.object({ workspaceId, id: uuid, reason }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const userId = userIdOf(ctx.caller);
    const saved = await services.storage.transaction(async (tx) => {
      const request = await forDecision(tx, workspace, userId, input.id, now);
      if (approverIdsOf(request).includes(userId)) {
        throw new FailedPreconditionError("you approved this request already; another approver must", {
          reason: "ALREADY_APPROVED_BY_CALLER",
        });
      }
      let next = transition(request, "approval", userId, input.reason ?? "", now);
      const approved = approverIdsOf(next).length >= request.policy.approvalsRequired;
      if (approved) {
        next = transition(next, "approved", userId, input.reason ?? "", now, {
          state: "approved",
          approvedAt: now,
          endsAt: new Date(now.getTime() + request.durationSeconds * 1000),
        });
        next = { ...next, version: request.version + 1 };
      }
      await save(tx, next);
      const resource = `access_request:${request.id}`;
      await audit(tx, { action: "access_request.approval", resource });
      if (approved) await audit(tx, { action: "access_request.approve", resource });
      return next;
    });
    return { request: await answerFor(services.storage, workspace, userId, saved, now) };
  },
});

export const denyAccessRequest = defineOperation({
  method: AccessRequestService.method.denyAccessRequest,
  access: { kind: "workspace", permission: "access_requests.decide", callers: userCallers },
  input: z.object({ workspaceId, id: uuid, reason }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const userId = userIdOf(ctx.caller);
    const saved = await services.storage.transaction(async (tx) => {
      const request = await forDecision(tx, workspace, userId, input.id, now);
      const next = transition(request, "denied", userId, input.reason ?? "", now, { state: "denied" });
      await save(tx, next);
      await audit(tx, { action: "access_request.deny", resource: `access_request:${request.id}` });
      return next;
    });
    return { request: await answerFor(services.storage, workspace, userId, saved, now) };
  },
});

export const withdrawAccessRequest = defineOperation({
  method: AccessRequestService.method.withdrawAccessRequest,
  access: { kind: "workspace", permission: "access_requests.create", callers: userCallers },
  notifiesDaemons: ["access_request_target", "revocations"],
  input: z.object({ workspaceId, id: uuid, reason }),
  async run({ input, workspace, services, now, audit, ctx }) {
    const userId = userIdOf(ctx.caller);
    const saved = await services.storage.transaction(async (tx) => {
      const request = await findVisible(tx, workspace, userId, input.id);
      const state = stateAt(request, now);
      if (state === "expired") expectPending(request, now);
      if (state !== "pending" && state !== "approved") {
        throw new FailedPreconditionError(`access request ${request.id} is ${state} already`, {
          reason: "ACCESS_REQUEST_DECIDED",
        });
      }
      const next = transition(request, "withdrawn", userId, input.reason ?? "", now, { state: "withdrawn" });
      await save(tx, next);
      await audit(tx, { action: "access_request.withdraw", resource: `access_request:${request.id}` });
      // The certificates issued under it go into their authorities' revocation lists now.
      const { entries } = await revokeIssuedUnder(tx, next, `user:${userId}`, now);
      for (const entry of entries) await audit(tx, entry);
      return next;
    });
    return { request: await answerFor(services.storage, workspace, userId, saved, now) };
  },
});

export const accessRequestOperations = [
  createAccessRequest,
  getAccessRequest,
  listAccessRequests,
  approveAccessRequest,
  denyAccessRequest,
  withdrawAccessRequest,
];

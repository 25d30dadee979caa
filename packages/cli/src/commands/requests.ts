/**
 * Just-in-time access: `wap request`, `wap requests`, `wap approve`, `wap deny`, and what
 * `wap ssh --request` uses to ask and wait.
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type AccessRequest, AccessRequestEventType, AccessRequestState } from "@wap/api";
import { findTarget, subjectAccess } from "../access.js";
import { formatDuration } from "../duration.js";
import { CliError, usageError } from "../exit-codes.js";
import { printable, table } from "../output.js";
import { type CommandContext, type SessionWith, withSession } from "../session.js";
import { resolveWorkspace } from "../workspaces.js";

/** How often a waiting `wap request` reads its request again. */
const pollMs = 1000;

const stateNames: Record<number, string> = {
  [AccessRequestState.PENDING]: "pending",
  [AccessRequestState.APPROVED]: "approved",
  [AccessRequestState.DENIED]: "denied",
  [AccessRequestState.EXPIRED]: "expired",
  [AccessRequestState.WITHDRAWN]: "withdrawn",
  [AccessRequestState.ENDED]: "ended",
};
export const stateName = (r: AccessRequest) => stateNames[r.state] ?? "unknown";

const at = (r: AccessRequest, field: "endsAt" | "decideBy") => {
  const value = r[field];
  return value === undefined ? "" : timestampDate(value).toISOString();
};

/** The request as `--json` prints it. */
function requestJson(r: AccessRequest) {
  return {
    id: r.id,
    targetId: r.targetId,
    login: r.login,
    requesterId: r.requesterId,
    reason: r.reason,
    durationSeconds: Number(r.duration?.seconds ?? 0n),
    state: stateName(r),
    approvalsRequired: r.approvalsRequired,
    approverIds: r.approverIds,
    decideBy: at(r, "decideBy"),
    endsAt: at(r, "endsAt"),
    events: r.events.map((e) => ({
      type: AccessRequestEventType[e.type]?.toLowerCase() ?? "unknown",
      actorId: e.actorId,
      reason: e.reason,
      at: e.at === undefined ? "" : timestampDate(e.at).toISOString(),
    })),
  };
}

export interface AskOptions {
  readonly login: string;
  readonly durationMs: number;
  readonly reason: string;
  readonly wait: boolean;
}

/**
 * Asks for access to `targetName` as `login`, then (unless told not to) waits until it is decided.
 * Throws unless the request ends approved when waiting.
 */
export async function ask(
  ctx: CommandContext,
  session: SessionWith<"workspaces" | "targets" | "accessRequests">,
  targetName: string,
  options: AskOptions,
): Promise<AccessRequest> {
  const workspace = await resolveWorkspace(ctx, session);
  const access = await subjectAccess(session, workspace.id);
  const reachable = findTarget(access, targetName, printable(workspace.name));
  const seconds = Math.ceil(options.durationMs / 1000);
  const { request } = await session.clients.accessRequests.createAccessRequest({
    workspaceId: workspace.id,
    targetId: reachable.target.id,
    login: options.login,
    duration: { seconds: BigInt(seconds), nanos: 0 },
    reason: options.reason,
  });
  let current = request!;
  ctx.out.note(
    `Asked for ${printable(options.login)} on ${printable(reachable.target.name)} for ${formatDuration(seconds * 1000)}: request ${printable(current.id)}`,
  );
  if (!options.wait) return current;
  ctx.out.note(`Waiting for approval (until ${at(current, "decideBy")}); \`wap requests\` shows it.`);
  while (current.state === AccessRequestState.PENDING) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    current = (
      await session.clients.accessRequests.getAccessRequest({ workspaceId: workspace.id, id: current.id })
    ).request!;
  }
  if (current.state !== AccessRequestState.APPROVED) {
    const last = current.events.at(-1);
    const why = last?.reason ? `: ${printable(last.reason)}` : "";
    throw new CliError(`request ${printable(current.id)} was ${stateName(current)}${why}`);
  }
  ctx.out.note(`Approved until ${at(current, "endsAt")}.`);
  return current;
}

export async function request(ctx: CommandContext, target: string, options: AskOptions): Promise<void> {
  await withSession(ctx, async (session) => {
    const done = await ask(ctx, session, target, options);
    ctx.out.result(requestJson(done), () => done.id);
  });
}

export async function requests(ctx: CommandContext): Promise<void> {
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const { requests: list } = await session.clients.accessRequests.listAccessRequests({
      workspaceId: workspace.id,
    });
    const rows = list.map(requestJson);
    ctx.out.result(rows, () =>
      rows.length === 0
        ? `No access requests of yours or for you to decide in ${printable(workspace.name)}.`
        : table(
            ["ID", "STATE", "LOGIN", "TARGET", "REQUESTER", "APPROVALS", "REASON"],
            rows.map((r) => [
              r.id,
              r.state,
              printable(r.login),
              r.targetId,
              r.requesterId,
              `${r.approverIds.length}/${r.approvalsRequired}`,
              printable(r.reason),
            ]),
          ),
    );
  });
}

export async function decide(
  ctx: CommandContext,
  decision: "approve" | "deny",
  id: string,
  reason: string | undefined,
): Promise<void> {
  if (!/^[0-9a-f-]{36}$/i.test(id))
    throw usageError(`"${printable(id)}" is not a request id (wap requests lists them)`);
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const call = { workspaceId: workspace.id, id, reason: reason ?? "" };
    const { request: decided } =
      decision === "approve"
        ? await session.clients.accessRequests.approveAccessRequest(call)
        : await session.clients.accessRequests.denyAccessRequest(call);
    const r = requestJson(decided!);
    ctx.out.result(r, () =>
      r.state === "pending"
        ? `Approved request ${printable(r.id)} (${r.approverIds.length} of ${r.approvalsRequired} approvals).`
        : `Request ${printable(r.id)} is ${r.state}${r.endsAt === "" ? "" : ` until ${r.endsAt}`}.`,
    );
  });
}

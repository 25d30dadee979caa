/**
 * What `wap ssh` asks the server before ssh runs: the workspace, the caller's access there (the
 * target, its logins, its authority and host CAs), an approved access request for a login held
 * on request, and a certificate when none stored can be used. What it learns of a login held
 * outright is kept (login-cache.ts) for the next `wap ssh` to the same destination.
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { AccessRequest, GetSubjectAccessResponse, Workspace } from "@wap/api";
import { AccessRequestState } from "@wap/api/gen/platform/v1/access_request_pb";
import { findTarget, type Reachable, subjectAccess } from "../access.js";
import type { SshOptions } from "../commands/ssh.js";
import { CliError } from "../exit-codes.js";
import { printable } from "../output.js";
import { RpcError } from "../rpc-errors.js";
import { type CommandContext, openSessionWith, type SessionWith } from "../session.js";
import { resolveWorkspace } from "../workspaces.js";
import {
  type LoginBinding,
  removeEndedRequestCertificates,
  type UserCertificate,
} from "./certificate-files.js";
import { type CachedLogin, saveLogin } from "./login-cache.js";
import { loginClients } from "./login-clients.js";
import { defaultRenewBeforeMs } from "./renewal.js";
import type { LoginPlan } from "./run-ssh.js";
import { issueUnderStepUp, markHanded, runStepUp } from "./step-up.js";
import { isLoginName, usableEndpoints, writeKnownHosts } from "./targets.js";
import { ensureCertificate, issueCertificate, type SigningSession } from "./user-certificates.js";

/** The login to use: the one asked for if granted, else the first granted one. */
export function chooseLogin(reachable: Reachable, requested: string | undefined): string {
  const { logins, target } = reachable;
  if (logins.length === 0)
    throw new CliError(`you have no login on ${target.name}: ask a workspace administrator for one`);
  if (requested === undefined) return logins[0]!;
  if (!logins.includes(requested)) {
    throw new CliError(
      `you may not log in as "${requested}" on ${target.name}; your logins there: ${logins.join(", ")} (e.g. \`wap ssh ${logins[0]}@${target.name}\`)`,
    );
  }
  return requested;
}

type LoginSession = SessionWith<"workspaces" | "targets" | "accessRequests" | "certificates">;

const endOf = (r: AccessRequest) => (r.endsAt === undefined ? 0 : timestampDate(r.endsAt).getTime());

/**
 * A login held only on request: the approved request of the caller it goes on under (the one
 * named by `--use-request`, else the one that ends last, or the one `--request` asked for and got
 * approved), with the ids of all the caller's requests approved now; otherwise says how to ask.
 * Undefined for a login held without one.
 */
async function ensureApproval(
  ctx: CommandContext,
  session: LoginSession,
  workspace: Workspace,
  reachable: Reachable,
  login: string,
  options: SshOptions,
): Promise<{ request: AccessRequest; approved: Set<string> } | undefined> {
  if (!reachable.onRequest.includes(login)) {
    if (options.useRequest !== undefined)
      throw new CliError(
        `"${printable(login)}" on ${printable(reachable.target.name)} needs no access request`,
      );
    return undefined;
  }
  const { requests } = await session.clients.accessRequests.listAccessRequests({
    workspaceId: workspace.id,
    state: AccessRequestState.APPROVED,
  });
  const approvedMine = requests.filter(
    (r) =>
      r.requesterId === session.subjectId && r.state === AccessRequestState.APPROVED && endOf(r) > Date.now(),
  );
  const approved = new Set(approvedMine.map((r) => r.id));
  const mine = approvedMine
    .filter((r) => r.targetId === reachable.target.id && r.login === login)
    .sort((a, b) => endOf(b) - endOf(a));
  const target = printable(reachable.target.name);
  if (options.useRequest !== undefined) {
    const chosen = mine.find((r) => r.id === options.useRequest);
    if (chosen === undefined) {
      throw new CliError(
        `request ${printable(options.useRequest)} is not an approved request of yours for "${printable(login)}" on ${target} (\`wap requests\` lists them)`,
      );
    }
    return { request: chosen, approved };
  }
  if (mine[0] !== undefined) return { request: mine[0], approved };
  if (options.request === undefined) {
    throw new CliError(
      `logging in as "${printable(login)}" on ${target} needs an approved access request: ask with \`wap ssh --request --reason <why> ${printable(login)}@${target}\` or \`wap request ${target} --login ${printable(login)} --duration 1h --reason <why>\``,
    );
  }
  const { ask } = await import("../commands/requests.js");
  const asked = await ask(ctx, session, reachable.target.id, {
    login,
    durationMs: options.request.durationMs,
    reason: options.request.reason,
    wait: true,
  });
  return { request: asked, approved: approved.add(asked.id) };
}

/** Reuse margin of a certificate bound to a request: it ends with the approval, never later. */
const requestRenewBeforeMs = 30_000;

/**
 * The caller's access in the workspace of the last `wap ssh` to this destination (one call), or
 * in the workspace resolved afresh when there was none or the caller is no longer in it.
 */
async function workspaceAccess(
  ctx: CommandContext,
  session: LoginSession,
  known: CachedLogin | undefined,
): Promise<{ workspace: Workspace; access: GetSubjectAccessResponse }> {
  if (known !== undefined) {
    try {
      const workspace = { id: known.workspace.id, name: known.workspace.name } as Workspace;
      return { workspace, access: await subjectAccess(session, known.workspace.id) };
    } catch (error) {
      const gone = error instanceof RpcError && [Code.PermissionDenied, Code.NotFound].includes(error.code);
      if (!gone) throw error;
    }
  }
  const workspace = await resolveWorkspace(ctx, session);
  return { workspace, access: await subjectAccess(session, workspace.id) };
}

/** What the cache keeps of a target once the server answered for it. */
function cacheEntry(key: string, workspace: Workspace, reachable: Reachable): CachedLogin {
  const { target, logins, onRequest, limited, authority } = reachable;
  return {
    key,
    workspace: { id: workspace.id, name: workspace.name },
    target: { id: target.id, name: target.name, endpoints: [...target.endpoints] },
    caId: authority!.id,
    caPublicKey: authority!.publicKey,
    logins,
    standing: logins.filter((l) => isLoginName(l) && !onRequest.includes(l) && !limited.includes(l)),
    savedAt: Date.now(),
  };
}

/**
 * A login whose grants require a step-up: a ceremony for it alone, then its single-use
 * certificate, handed to this ssh (the ssh hook will not hand it again).
 */
async function stepUpCertificate(
  ctx: CommandContext,
  session: SigningSession,
  workspaceId: string,
  caId: string,
  binding: LoginBinding,
  targetName: string,
): Promise<UserCertificate> {
  const { id: stepUpId } = await runStepUp(
    session,
    ctx.out,
    workspaceId,
    [binding],
    `logging in as "${binding.login}" on ${printable(targetName)}`,
  );
  const certificate = await issueUnderStepUp(session, ctx.store, ctx.env, {
    workspaceId,
    caId,
    stepUpId,
    binding,
  });
  await markHanded(ctx.store, caId, binding, certificate.info.serial.toString());
  return certificate;
}

/** Asks the server what a `wap ssh` to `name` needs, signs a certificate if needed, and says how to run ssh. */
export async function planLogin(
  ctx: CommandContext,
  destination: { readonly name: string; readonly requested: string | undefined },
  options: SshOptions,
  cache: { readonly key: string; readonly known: CachedLogin | undefined },
): Promise<LoginPlan> {
  const { name, requested } = destination;
  const session = await openSessionWith(ctx, loginClients);
  try {
    const { workspace, access } = await workspaceAccess(ctx, session, cache.known);
    const reachable = findTarget(access, name, workspace.name);
    const login = chooseLogin(reachable, requested);
    const approval = await ensureApproval(ctx, session, workspace, reachable, login, options);
    if (reachable.authority === undefined) {
      throw new CliError(`the certificate authority of ${reachable.target.name} is not available to you`);
    }
    if (reachable.target.endpoints.length === 0) {
      throw new CliError(
        `${reachable.target.name} has no address yet: its agent has not reported one (is it running?)`,
      );
    }
    // Checked before anything is signed or written: a bad endpoint is refused, never dialled.
    const endpoints = usableEndpoints(reachable.target);
    if (!isLoginName(login)) {
      throw new CliError(
        `wap will not pass the login ${JSON.stringify(login)} to ssh: it is not a Unix login name; ask a workspace administrator to correct it`,
      );
    }
    // A login whose grants all carry limits takes a certificate signed for it, fresh each time
    // (it may be pinned to the address the server sees now). Under an approval, the certificate
    // is the request's own: never one of another request, or of one since ended or withdrawn.
    const request =
      approval === undefined ? undefined : { id: approval.request.id, targetId: reachable.target.id };
    const limited = reachable.limited.includes(login);
    const binding = { targetId: reachable.target.id, login };
    const certificate = reachable.stepUp.includes(login)
      ? await stepUpCertificate(
          ctx,
          session,
          workspace.id,
          reachable.authority.id,
          binding,
          reachable.target.name,
        )
      : limited
        ? await issueCertificate(session, ctx.store, ctx.env, {
            workspaceId: workspace.id,
            caId: reachable.authority.id,
            binding,
            ...(request && { request }),
          })
        : await ensureCertificate(session, ctx.store, ctx.env, {
            workspaceId: workspace.id,
            caId: reachable.authority.id,
            caPublicKey: reachable.authority.publicKey,
            renewBeforeMs: approval === undefined ? defaultRenewBeforeMs : requestRenewBeforeMs,
            ...(request && { request }),
          });
    // The keys and certificates of this authority's requests no longer approved go.
    if (approval !== undefined)
      await removeEndedRequestCertificates(ctx.store, reachable.authority.id, approval.approved);
    const knownHosts = await writeKnownHosts(ctx.store, workspace.id, access);
    // A token's session is not this device's: nothing of it is kept.
    if (session.kind === "device")
      await saveLogin(ctx.store, session.config, cache.key, cacheEntry(cache.key, workspace, reachable));
    return {
      target: reachable.target,
      login,
      files: {
        identityFile: certificate.identityFile,
        certificateFile: certificate.certificateFile,
        knownHostsFile: knownHosts,
      },
      endpoints,
      standing: approval === undefined && !limited,
      agentOffline: reachable.daemon !== undefined && !reachable.daemon.online,
    };
  } finally {
    session.close();
  }
}

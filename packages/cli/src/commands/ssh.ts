/**
 * `wap ssh [<login>@]<target> [-- <command>...]` and `wap config ssh`.
 *
 * @module
 */
import { join } from "node:path";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type AccessRequest,
  AccessRequestState,
  type GetSubjectAccessResponse,
  type Workspace,
} from "@wap/api";
import { findTarget, type Reachable, reachableTargets, subjectAccess } from "../access.js";
import type { ConfigStore } from "../config.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { selfCommand, shellQuote } from "../invocation.js";
import { printable } from "../output.js";
import { RpcError } from "../rpc-errors.js";
import { type CommandContext, type Session, withSession } from "../session.js";
import { defaultRenewBeforeMs } from "../ssh/renewal.js";
import { firstReachable, runSsh, sshArguments } from "../ssh/run-ssh.js";
import { configValue, type HostBlock, type RenewalHook, renderSshConfig } from "../ssh/ssh-config.js";
import { issueUnderStepUp, markHanded, runStepUp } from "../ssh/step-up.js";
import {
  isId,
  isLoginName,
  knownHostsFile,
  type SshFiles,
  sshSettings,
  targetProblem,
  usableEndpoints,
} from "../ssh/targets.js";
import {
  certificatePaths,
  ensureCertificate,
  issueCertificate,
  type LoginBinding,
  removeEndedRequestCertificates,
  type UserCertificate,
} from "../ssh/user-certificates.js";
import { listWorkspaces, resolveWorkspace } from "../workspaces.js";

export function knownHostsPath(store: ConfigStore, workspaceId: string): string {
  // The id names a file: only ever a UUID, never a path.
  if (!isId(workspaceId))
    throw new CliError(`the server named a workspace ${JSON.stringify(workspaceId)}, which is not an id`);
  return join(store.sshDir, `known_hosts-${workspaceId}`);
}

/** Writes the workspace's known_hosts file (its host CAs) and returns its path. */
async function writeKnownHosts(store: ConfigStore, workspaceId: string, access: GetSubjectAccessResponse) {
  const path = knownHostsPath(store, workspaceId);
  const text = knownHostsFile(access.certificateAuthorities, access.targets);
  // Usually unchanged since the last command: one read instead of a rewrite.
  if ((await store.readFile(path)) !== text) await store.writeFile(path, text);
  return path;
}

/** `login@target` or `target`. */
export function parseDestination(destination: string): { login: string | undefined; target: string } {
  const at = destination.lastIndexOf("@");
  return at < 0
    ? { login: undefined, target: destination }
    : { login: destination.slice(0, at) || undefined, target: destination.slice(at + 1) };
}

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

export interface SshOptions {
  /** For a login that needs approval: ask for it for this long, and wait. */
  readonly request?: { readonly durationMs: number; readonly reason: string };
  /** For a login that needs approval: the approved request to log in under (its id). */
  readonly useRequest?: string;
}

const endOf = (r: AccessRequest) => (r.endsAt === undefined ? 0 : timestampDate(r.endsAt).getTime());

/**
 * A login held only on request: the approved request of the caller it goes on under (the one
 * named by `--use-request`, else the one that ends last, or the one `--request` asked for and got
 * approved), with the ids of all the caller's requests approved now; otherwise says how to ask.
 * Undefined for a login held without one.
 */
async function ensureApproval(
  ctx: CommandContext,
  session: Session,
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
  const { ask } = await import("./requests.js");
  const asked = await ask(ctx, session, reachable.target.id, {
    login,
    durationMs: options.request.durationMs,
    reason: options.request.reason,
    wait: true,
  });
  return { request: asked, approved: approved.add(asked.id) };
}

/**
 * A login whose grants require a step-up: a ceremony for it alone, then its single-use
 * certificate, handed to this ssh (the ssh hook will not hand it again).
 */
async function stepUpCertificate(
  ctx: CommandContext,
  session: Session,
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

/** Reuse margin of a certificate bound to a request: it ends with the approval, never later. */
const requestRenewBeforeMs = 30_000;

export async function ssh(
  ctx: CommandContext,
  destination: string,
  command: readonly string[],
  options: SshOptions = {},
): Promise<number> {
  const { login: requested, target: name } = parseDestination(destination);
  const prepared = await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const access = await subjectAccess(session, workspace.id);
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
      : reachable.limited.includes(login)
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
    return { reachable, login, certificate, knownHosts, endpoints };
  });
  const { reachable, login, certificate, knownHosts, endpoints } = prepared;
  // With one address there is nothing to choose: ssh connects (and says why it cannot) itself,
  // and sshd is not made to start a connection only to have it dropped.
  const endpoint = (endpoints.length > 1 ? await firstReachable(endpoints) : undefined) ?? endpoints[0]!;
  const settings = sshSettings(
    {
      identityFile: certificate.identityFile,
      certificateFile: certificate.certificateFile,
      knownHostsFile: knownHosts,
    },
    reachable.target,
  );
  const status = await runSsh(sshArguments(settings, endpoint, login, command), ctx.env);
  if (status === 255 && reachable.daemon !== undefined && !reachable.daemon.online) {
    ctx.out.note(
      `wap: the agent on ${reachable.target.name} is offline: start it on that machine (or ask its administrator), then try again`,
    );
  }
  return status;
}

/** Why a target is left out of the ssh config: its strings, or no login of the Unix form. */
export function configProblem(workspace: Workspace, reachable: Reachable): string | undefined {
  const problem = targetProblem(reachable.target);
  if (problem !== undefined) return problem;
  // Both ids go into the renewal hook's command line.
  if (!isId(workspace.id) || !isId(reachable.authority?.id ?? ""))
    return "the ids of its workspace or certificate authority are not UUIDs";
  if (!reachable.logins.some(isLoginName))
    return `none of its logins (${reachable.logins.map((l) => JSON.stringify(l)).join(", ")}) is a Unix login name`;
  return undefined;
}

export interface ConfigSshOptions {
  readonly renewBeforeMs: number;
}

/** The workspace in an alias: its name in [a-z0-9._-], else its id. */
function workspaceLabel(workspace: Workspace): string {
  const label = workspace.name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+|-+$/g, "");
  return label === "" ? workspace.id : label;
}

/** A Host alias unique across workspaces: the target's name, or `<workspace>/<name>` when taken. */
export function aliasesFor(entries: ReadonlyArray<{ workspace: Workspace; reachable: Reachable }>): string[] {
  const count = new Map<string, number>();
  for (const { reachable } of entries)
    count.set(reachable.target.name, (count.get(reachable.target.name) ?? 0) + 1);
  return entries.map(({ workspace, reachable }) =>
    count.get(reachable.target.name) === 1
      ? reachable.target.name
      : `${workspaceLabel(workspace)}/${reachable.target.name}`,
  );
}

/** The Host block of one target, for an entry {@link configProblem} found nothing wrong with. */
export function hostBlock(
  workspace: Workspace,
  reachable: Reachable,
  alias: string,
  files: SshFiles,
): HostBlock {
  const endpoint = usableEndpoints(reachable.target)[0]!;
  return {
    alias,
    comment: `${reachable.target.name} in ${workspace.name} (target ${reachable.target.id})`,
    settings: [
      ["HostName", endpoint.host],
      ["Port", String(endpoint.port)],
      ["User", reachable.logins.find(isLoginName)!],
      ...sshSettings(files, reachable.target),
    ],
  };
}

async function workspacesToConfigure(ctx: CommandContext, session: Session): Promise<Workspace[]> {
  if (ctx.options.workspace !== undefined) return [await resolveWorkspace(ctx, session)];
  return listWorkspaces(session);
}

export async function configSsh(ctx: CommandContext, options: ConfigSshOptions): Promise<void> {
  await withSession(ctx, async (session) => {
    const entries: Array<{ workspace: Workspace; reachable: Reachable; knownHosts: string }> = [];
    for (const workspace of await workspacesToConfigure(ctx, session)) {
      let access: GetSubjectAccessResponse;
      try {
        access = await subjectAccess(session, workspace.id);
      } catch (error) {
        if (error instanceof RpcError && error.exitCode !== ExitCode.notSignedIn) {
          ctx.out.note(
            `warning: skipping workspace ${printable(workspace.name)}: ${printable(error.message)}`,
          );
          continue;
        }
        throw error;
      }
      const knownHosts = await writeKnownHosts(ctx.store, workspace.id, access);
      for (const reachable of reachableTargets(access)) {
        if (
          reachable.authority === undefined ||
          reachable.target.endpoints.length === 0 ||
          reachable.logins.length === 0
        )
          continue;
        const problem = configProblem(workspace, reachable);
        if (problem !== undefined) {
          ctx.out.note(
            `warning: leaving out target ${JSON.stringify(reachable.target.name)} of workspace ${printable(workspace.name)}: ${printable(problem)}`,
          );
          continue;
        }
        entries.push({ workspace, reachable, knownHosts });
      }
    }
    const aliases = aliasesFor(entries);
    const hooks = new Map<string, RenewalHook & { aliases: string[] }>();
    const hosts: HostBlock[] = [];
    const wap = selfCommand();
    const renewIfUnder = `${Math.round(options.renewBeforeMs / 1000)}s`;
    for (const [i, { workspace, reachable, knownHosts }] of entries.entries()) {
      const ca = reachable.authority!;
      const alias = aliases[i]!;
      const user = reachable.logins.find(isLoginName)!;
      if (reachable.limited.includes(user)) {
        // The login's own certificate (its grant's limits), from a hook of its own that signs it
        // when ssh needs it: after a passkey step-up when the grant requires one.
        const binding = { targetId: reachable.target.id, login: user };
        const paths = certificatePaths(ctx.store, ca.id, { binding });
        hooks.set(`${workspace.id}/${ca.id}/${binding.targetId}/${user}`, {
          aliases: [alias],
          command: shellQuote([
            "env",
            `WAP_CONFIG_DIR=${ctx.store.dir}`,
            ...wap,
            "cert",
            "ssh",
            "--workspace",
            workspace.id,
            "--ca",
            ca.id,
            "--target",
            binding.targetId,
            "--login",
            user,
            "--renew-if-under",
            renewIfUnder,
            "--quiet",
          ]),
        });
        hosts.push(
          hostBlock(workspace, reachable, alias, {
            identityFile: paths.privateKey,
            certificateFile: paths.certificate,
            knownHostsFile: knownHosts,
          }),
        );
        continue;
      }
      // Signed now so plain ssh works at once; the hook renews it later.
      const certificate = await ensureCertificate(session, ctx.store, ctx.env, {
        workspaceId: workspace.id,
        caId: ca.id,
        caPublicKey: ca.publicKey,
        renewBeforeMs: options.renewBeforeMs,
      });
      const hookKey = `${workspace.id}/${ca.id}`;
      const hook = hooks.get(hookKey) ?? {
        aliases: [],
        command: shellQuote([
          "env",
          `WAP_CONFIG_DIR=${ctx.store.dir}`,
          ...wap,
          "cert",
          "ssh",
          "--workspace",
          workspace.id,
          "--ca",
          ca.id,
          "--renew-if-under",
          renewIfUnder,
          "--quiet",
        ]),
      };
      hook.aliases.push(alias);
      hooks.set(hookKey, hook);
      hosts.push(
        hostBlock(workspace, reachable, alias, {
          identityFile: certificate.identityFile,
          certificateFile: certificate.certificateFile,
          knownHostsFile: knownHosts,
        }),
      );
    }
    const configFile = join(ctx.store.sshDir, "config");
    await ctx.store.writeFile(configFile, renderSshConfig([...hooks.values()], hosts));
    const include = `Include ${configValue(configFile)}`;
    ctx.out.result(
      {
        configFile,
        include,
        hosts: hosts.map((h, i) => ({
          alias: h.alias,
          targetId: entries[i]!.reachable.target.id,
          workspaceId: entries[i]!.workspace.id,
          user: entries[i]!.reachable.logins.find(isLoginName),
        })),
      },
      () =>
        [
          `Wrote ${configFile} with ${hosts.length} host${hosts.length === 1 ? "" : "s"}${hosts.length === 0 ? "" : `: ${hosts.map((h) => h.alias).join(", ")}`}.`,
          "Add this line at the top of ~/.ssh/config (once), then `ssh <target>` works:",
          "",
          `  ${include}`,
        ].join("\n"),
    );
  });
}

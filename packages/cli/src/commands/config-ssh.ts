/**
 * `wap config ssh`: an ssh_config for every target the caller can reach, so that plain
 * `ssh <target>` works, with a hook that renews each authority's certificate before ssh uses it.
 *
 * @module
 */
import { join } from "node:path";
import type { GetSubjectAccessResponse, Workspace } from "@wap/api";
import { type Reachable, reachableTargets, subjectAccess } from "../access.js";
import { ExitCode } from "../exit-codes.js";
import { selfCommand, shellQuote } from "../invocation.js";
import { printable } from "../output.js";
import { RpcError } from "../rpc-errors.js";
import { type CommandContext, type Session, withSession } from "../session.js";
import { certificatePaths } from "../ssh/certificate-files.js";
import { configValue, type HostBlock, type RenewalHook, renderSshConfig } from "../ssh/ssh-config.js";
import {
  isId,
  isLoginName,
  type SshFiles,
  sshSettings,
  targetProblem,
  usableEndpoints,
  writeKnownHosts,
} from "../ssh/targets.js";
import { ensureCertificate } from "../ssh/user-certificates.js";
import { listWorkspaces, resolveWorkspace } from "../workspaces.js";

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
    /** The renewal hook's command: `wap cert ssh` for an authority, or for one login of a target. */
    const hookCommand = (workspaceId: string, caId: string, login?: { targetId: string; user: string }) =>
      shellQuote([
        "env",
        `WAP_CONFIG_DIR=${ctx.store.dir}`,
        ...wap,
        "cert",
        "ssh",
        "--workspace",
        workspaceId,
        "--ca",
        caId,
        ...(login === undefined ? [] : ["--target", login.targetId, "--login", login.user]),
        "--renew-if-under",
        `${Math.round(options.renewBeforeMs / 1000)}s`,
        "--quiet",
      ]);
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
          command: hookCommand(workspace.id, ca.id, { targetId: binding.targetId, user }),
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
        command: hookCommand(workspace.id, ca.id),
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

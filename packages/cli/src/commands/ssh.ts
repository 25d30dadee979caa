/**
 * `wap ssh [<login>@]<target> [-- <command>...]`.
 *
 * With what the last `wap ssh` to the destination learnt still fresh (login-cache.ts), a login
 * held outright and a valid certificate at hand, ssh runs at once: no call to the server, and
 * neither the client nor the contract is loaded. Without a valid certificate, one call signs one.
 * Otherwise the server is asked (login-plan.ts).
 *
 * @module
 */

import { type CommandContext, openSessionWith, serverOf, tokenOf } from "../session.js";
import { withoutComment } from "../ssh/agent.js";
import { currentCertificate, type UserCertificate } from "../ssh/certificate-files.js";
import { type CachedLogin, cachedLogin, cachedLoginName, cacheKey } from "../ssh/login-cache.js";
import { defaultRenewBeforeMs } from "../ssh/renewal.js";
import { type LoginPlan, runPlan } from "../ssh/run-ssh.js";
import { knownHostsPath, usableEndpoints } from "../ssh/targets.js";

/** `login@target` or `target`. */
export function parseDestination(destination: string): { login: string | undefined; target: string } {
  const at = destination.lastIndexOf("@");
  return at < 0
    ? { login: undefined, target: destination }
    : { login: destination.slice(0, at) || undefined, target: destination.slice(at + 1) };
}

export interface SshOptions {
  /** For a login that needs approval: ask for it for this long, and wait. */
  readonly request?: { readonly durationMs: number; readonly reason: string };
  /** For a login that needs approval: the approved request to log in under (its id). */
  readonly useRequest?: string;
}

/** A new certificate of the cached authority: the one call of a `wap ssh` that knows the rest. */
async function signCertificate(ctx: CommandContext, entry: CachedLogin): Promise<UserCertificate> {
  const [{ issueCertificate }, { certificateClients }] = await Promise.all([
    import("../ssh/user-certificates.js"),
    import("../ssh/certificate-client.js"),
  ]);
  const session = await openSessionWith(ctx, certificateClients);
  try {
    return await issueCertificate(session, ctx.store, ctx.env, {
      workspaceId: entry.workspace.id,
      caId: entry.caId,
    });
  } finally {
    session.close();
  }
}

/**
 * How to run ssh from the cache alone (or with one call to sign a certificate); undefined when
 * the cache cannot say: the login is not held outright there, or the known_hosts file is gone,
 * or the authority's key changed.
 */
async function planFromCache(
  ctx: CommandContext,
  entry: CachedLogin,
  requested: string | undefined,
): Promise<LoginPlan | undefined> {
  const login = cachedLoginName(entry, requested);
  if (login === undefined) return undefined;
  const knownHosts = knownHostsPath(ctx.store, entry.workspace.id);
  if ((await ctx.store.readFile(knownHosts)) === undefined) return undefined;
  const caKey = withoutComment(entry.caPublicKey.split("\n")[0]!);
  const certificate =
    (await currentCertificate(ctx.store, ctx.env, entry.caId, defaultRenewBeforeMs, entry.caPublicKey)) ??
    (await signCertificate(ctx, entry));
  // Signed by another key: the authority rotated, and the server is asked what else changed.
  if (certificate.info.caPublicKey !== caKey) return undefined;
  return {
    target: entry.target,
    login,
    files: {
      identityFile: certificate.identityFile,
      certificateFile: certificate.certificateFile,
      knownHostsFile: knownHosts,
    },
    endpoints: usableEndpoints(entry.target),
    standing: true,
    agentOffline: false,
  };
}

export async function ssh(
  ctx: CommandContext,
  destination: string,
  command: readonly string[],
  options: SshOptions = {},
): Promise<number> {
  const { login: requested, target: name } = parseDestination(destination);
  const config = await ctx.store.read();
  const key = cacheKey(ctx.options.workspace ?? config.workspace?.id, name);
  // The cache is the signed-in device's: not a token's, not another server's, not for requests.
  const cacheable =
    options.request === undefined &&
    options.useRequest === undefined &&
    tokenOf(ctx) === undefined &&
    config.server !== undefined &&
    serverOf(ctx, config) === config.server;
  const known = cacheable ? await cachedLogin(ctx.store, config, key) : undefined;
  const cached = known === undefined ? undefined : await planFromCache(ctx, known, requested);
  const ask = async () =>
    (await import("../ssh/login-plan.js")).planLogin(ctx, { name, requested }, options, { key, known });
  let plan = cached ?? (await ask());
  let status = await runPlan(plan, command, ctx.env);
  if (status === 255 && cached !== undefined) {
    // ssh failed with what the cache said: the server says what holds now. A login no longer
    // held outright means sshd refused the shared certificate (the command did not run), so
    // ssh runs once more as the server now says; any other answer stands as ssh's failure.
    plan = await ask();
    if (!plan.standing) status = await runPlan(plan, command, ctx.env);
  }
  if (status === 255 && plan.agentOffline) {
    ctx.out.note(
      `wap: the agent on ${plan.target.name} is offline: start it on that machine (or ask its administrator), then try again`,
    );
  }
  return status;
}

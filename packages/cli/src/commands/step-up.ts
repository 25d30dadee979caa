/**
 * `wap step-up [<login>@]<target>... | --all`: one passkey ceremony for a run across many hosts;
 * then, within the server's signing window, the ssh hook of each host signs one single-use
 * certificate for its login under it and hands it to plain `ssh` (and scp, rsync, Ansible) once.
 *
 * `wap cert ssh --target <id> --login <login>`, the hook `wap config ssh` writes for a login whose
 * grants carry limits: it hands ssh the login's own certificate, signing a new one when needed,
 * after a ceremony when its grants require a step-up.
 *
 * @module
 */
import { findTarget, type Reachable, reachableTargets, subjectAccess } from "../access.js";
import { CliError, usageError } from "../exit-codes.js";
import { printable } from "../output.js";
import { type CommandContext, withSession } from "../session.js";
import type { LoginBinding } from "../ssh/certificate-files.js";
import { defaultRenewBeforeMs } from "../ssh/renewal.js";
import {
  issueUnderStepUp,
  keepStepUp,
  keptStepUp,
  markHanded,
  runStepUp,
  usableLoginCertificate,
} from "../ssh/step-up.js";
import { isId, isLoginName, targetProblem } from "../ssh/targets.js";
import { issueCertificate } from "../ssh/user-certificates.js";
import { resolveWorkspace } from "../workspaces.js";
import { parseDestination } from "./ssh.js";

interface Planned {
  readonly reachable: Reachable;
  readonly binding: LoginBinding;
  readonly caId: string;
}

/** The login a destination names that needs a step-up, or an error saying why not. */
function planned(reachable: Reachable, requested: string | undefined): Planned {
  const name = printable(reachable.target.name);
  const login = requested ?? reachable.stepUp[0];
  if (login === undefined)
    throw new CliError(
      `none of your logins on ${name} needs a step-up: log in with plain ssh or \`wap ssh\``,
    );
  if (!reachable.stepUp.includes(login))
    throw new CliError(
      `your login "${printable(login)}" on ${name} needs no step-up (those that do: ${reachable.stepUp.map((l) => printable(l)).join(", ") || "none"})`,
    );
  const problem = targetProblem(reachable.target);
  if (problem !== undefined)
    throw new CliError(`wap will not sign for ${JSON.stringify(reachable.target.name)}: ${problem}`);
  if (!isLoginName(login)) throw new CliError(`the login ${JSON.stringify(login)} is not a Unix login name`);
  if (reachable.authority === undefined || !isId(reachable.authority.id))
    throw new CliError(`the certificate authority of ${name} is not available to you`);
  return { reachable, binding: { targetId: reachable.target.id, login }, caId: reachable.authority.id };
}

export interface StepUpOptions {
  /** Every login of the workspace that needs a step-up. */
  readonly all: boolean;
}

export async function stepUp(
  ctx: CommandContext,
  destinations: readonly string[],
  options: StepUpOptions,
): Promise<void> {
  if (options.all === destinations.length > 0)
    throw usageError("name the targets ([login@]target ...) or give --all, not both");
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const access = await subjectAccess(session, workspace.id);
    const plan = options.all
      ? reachableTargets(access)
          .filter((r) => r.stepUp.length > 0 && targetProblem(r.target) === undefined)
          .flatMap((r) => r.stepUp.filter(isLoginName).map((login) => planned(r, login)))
      : destinations.map((d) => {
          const { login, target } = parseDestination(d);
          return planned(findTarget(access, target, workspace.name), login);
        });
    if (plan.length === 0) throw new CliError("none of your logins in this workspace needs a step-up");
    const names = plan.map((p) => `${p.binding.login}@${printable(p.reachable.target.name)}`);
    const bindings = plan.map((p) => p.binding);
    const completed = await runStepUp(
      session,
      ctx.out,
      workspace.id,
      bindings,
      plan.length === 1 ? `logging in as ${names[0]}` : `logging in to ${plan.length} hosts`,
    );
    // Each host's certificate is signed when ssh connects there: its minute starts then.
    await keepStepUp(ctx.store, workspace.id, completed, bindings);
    ctx.out.result(
      {
        stepUpId: completed.id,
        signUntil: completed.signUntil.toISOString(),
        logins: plan.map((p) => p.binding),
      },
      () =>
        [
          `Confirmed ${plan.length} login${plan.length === 1 ? "" : "s"}: ${names.join(", ")}.`,
          `Until ${completed.signUntil.toISOString()}, ssh (or scp, rsync, ansible) to each gets a certificate for one connection.`,
        ].join("\n"),
    );
  });
}

export interface LoginCertificateOptions {
  readonly ca: string;
  readonly target: string;
  readonly login: string;
  readonly renewBeforeMs?: number;
  readonly quiet: boolean;
}

/** The ssh hook of a login with limits: hands ssh a certificate for it (see the module's comment). */
export async function loginCertificate(ctx: CommandContext, options: LoginCertificateOptions): Promise<void> {
  const binding = { targetId: options.target, login: options.login };
  if (!isId(options.ca) || !isId(options.target) || !isLoginName(options.login))
    throw usageError("--ca and --target take ids, --login a Unix login name");
  const renewBeforeMs = options.renewBeforeMs ?? defaultRenewBeforeMs;
  // From the files alone while a certificate is good: no request, no ceremony.
  const stored = await usableLoginCertificate(ctx.store, options.ca, binding, renewBeforeMs);
  if (stored !== undefined) {
    if (stored.singleUse) await markHanded(ctx.store, options.ca, binding, stored.serial);
    if (!options.quiet)
      ctx.out.result({ ...stored, renewed: false }, () => `Certificate: ${stored.certificateFile}`);
    return;
  }
  await withSession(ctx, async (session) => {
    const workspace = await resolveWorkspace(ctx, session);
    const access = await subjectAccess(session, workspace.id);
    const reachable = findTarget(access, options.target, workspace.name);
    if (reachable.authority?.id !== options.ca)
      throw new CliError(
        `${printable(reachable.target.name)} no longer trusts that authority: run \`wap config ssh\` again`,
      );
    if (!reachable.logins.includes(options.login))
      throw new CliError(
        `you no longer hold the login "${options.login}" on ${printable(reachable.target.name)}`,
      );
    const certificate = reachable.stepUp.includes(options.login)
      ? await (async () => {
          // Under the step-up of `wap step-up` when it covers this login, else a ceremony of its own.
          const kept = await keptStepUp(ctx.store, workspace.id, binding);
          const stepUpId =
            kept ??
            (
              await runStepUp(
                session,
                ctx.out,
                workspace.id,
                [binding],
                `logging in as "${options.login}" on ${printable(reachable.target.name)}`,
              )
            ).id;
          const issued = await issueUnderStepUp(session, ctx.store, ctx.env, {
            workspaceId: workspace.id,
            caId: options.ca,
            stepUpId,
            binding,
          });
          await markHanded(ctx.store, options.ca, binding, issued.info.serial.toString());
          return issued;
        })()
      : await issueCertificate(session, ctx.store, ctx.env, {
          workspaceId: workspace.id,
          caId: options.ca,
          binding,
        });
    if (!options.quiet)
      ctx.out.result(
        { certificateFile: certificate.certificateFile, renewed: true },
        () => `Certificate: ${certificate.certificateFile}`,
      );
  });
}

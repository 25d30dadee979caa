/**
 * Passkey step-up for logins whose grants require one: the ceremony (the server's page where the
 * user gives a passkey; wap waits for it), the single-use certificates signed under it, one per
 * login, and how the ssh hook hands each of them to ssh once.
 *
 * A step-up of `wap step-up` covers a run across many hosts: it is kept until the server's
 * signing window ends, and the hook of each host signs that host's certificate under it when ssh
 * connects there, so each certificate's minute starts when it is used.
 *
 *     ssh/<ca id>.<target id>.<login>-cert.pub          the certificate (valid 60 s, used once)
 *     ssh/<ca id>.<target id>.<login>-cert.pub.handed   the serial the hook last handed to ssh
 *     ssh/step-up-<workspace id>.json                   the step-up of the last `wap step-up`
 *
 * @module
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { StepUpState } from "@wap/api/gen/platform/v1/certificates_pb";
import { SINGLE_USE_EXTENSION } from "@wap/ssh-wire/extensions";
import type { ConfigStore } from "../config.js";
import { CliError } from "../exit-codes.js";
import type { Output } from "../output.js";
import { printable } from "../output.js";
import {
  certificatePaths,
  type LoginBinding,
  readCertificateFile,
  type UserCertificate,
} from "./certificate-files.js";
import { isId } from "./targets.js";
import { issueCertificate, type SigningSession } from "./user-certificates.js";

/** How often wap asks whether the passkey was given. */
const pollMs = 1_000;
/** A certificate with less left than this is not handed to ssh (it could expire mid-handshake). */
const handOverMarginMs = 5_000;

/** A ceremony URL as wap prints it: http(s) only, escaped to one line. */
function ceremonyUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`the server sent a step-up page that is not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:")
    throw new CliError(`the server sent a step-up page that is not http(s): ${JSON.stringify(url)}`);
  return printable(parsed.toString());
}

/**
 * Begins a step-up for `bindings`, tells the user where to give the passkey (stderr: ssh's
 * `Match exec` hook shows it), and waits until it is given. Returns the step-up's id.
 */
export async function runStepUp(
  session: SigningSession,
  out: Output,
  workspaceId: string,
  bindings: readonly LoginBinding[],
  describe: string,
): Promise<{ id: string; signUntil: Date }> {
  const { stepUp } = await session.clients.certificates.beginSSHStepUp({
    workspaceId,
    targets: bindings.map((b) => ({ targetId: b.targetId, login: b.login })),
  });
  if (stepUp === undefined) throw new CliError("the server began no step-up");
  out.note(
    `wap: ${describe} needs your passkey. Open this page, signed in, and confirm:\n\n  ${ceremonyUrl(stepUp.ceremonyUrl)}\n\nWaiting for the passkey...`,
  );
  for (;;) {
    const { stepUp: now } = await session.clients.certificates.getSSHStepUp({ workspaceId, id: stepUp.id });
    if (now?.state === StepUpState.COMPLETED)
      return { id: stepUp.id, signUntil: now.expiresAt ? timestampDate(now.expiresAt) : new Date() };
    if (now?.state !== StepUpState.PENDING)
      throw new CliError("the step-up expired before the passkey was given: run the command again");
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Signs the certificate of each login under the completed step-up, kept as its login's files. */
export async function issueUnderStepUp(
  session: SigningSession,
  store: ConfigStore,
  env: NodeJS.ProcessEnv,
  params: { workspaceId: string; caId: string; stepUpId: string; binding: LoginBinding },
): Promise<UserCertificate> {
  return issueCertificate(session, store, env, {
    workspaceId: params.workspaceId,
    caId: params.caId,
    binding: params.binding,
    stepUpId: params.stepUpId,
  });
}

const handedPath = (certificateFile: string) => `${certificateFile}.handed`;

/**
 * The login's stored certificate if ssh may still use it: a single-use one not yet handed over
 * with more than a few seconds left, else one good for longer than `renewBeforeMs`.
 */
export async function usableLoginCertificate(
  store: ConfigStore,
  caId: string,
  binding: LoginBinding,
  renewBeforeMs: number,
): Promise<
  { singleUse: boolean; serial: string; certificateFile: string; identityFile: string } | undefined
> {
  const paths = certificatePaths(store, caId, { binding });
  const info = await readCertificateFile(store, paths.certificate);
  if (info === undefined) return undefined;
  const left = info.validBefore.getTime() - Date.now();
  const serial = info.serial.toString();
  const files = { certificateFile: paths.certificate, identityFile: paths.privateKey };
  const singleUse = SINGLE_USE_EXTENSION in info.extensions;
  if (singleUse) {
    const handed = (await store.readFile(handedPath(paths.certificate)))?.trim();
    return left > handOverMarginMs && handed !== serial ? { singleUse, serial, ...files } : undefined;
  }
  return left > renewBeforeMs ? { singleUse, serial, ...files } : undefined;
}

/** Notes that the single-use certificate with `serial` went to ssh: the next ssh needs another. */
export async function markHanded(store: ConfigStore, caId: string, binding: LoginBinding, serial: string) {
  const paths = certificatePaths(store, caId, { binding });
  await store.writeFile(handedPath(paths.certificate), `${serial}\n`);
}

interface KeptStepUp {
  readonly id: string;
  readonly signUntil: number;
  readonly logins: readonly LoginBinding[];
}

function keptPath(store: ConfigStore, workspaceId: string): string {
  if (!isId(workspaceId))
    throw new CliError(`the server named a workspace ${JSON.stringify(workspaceId)}, which is not an id`);
  return `${store.sshDir}/step-up-${workspaceId}.json`;
}

/** Keeps a completed step-up for the hooks of the hosts it covers. */
export async function keepStepUp(
  store: ConfigStore,
  workspaceId: string,
  stepUp: { id: string; signUntil: Date },
  logins: readonly LoginBinding[],
): Promise<void> {
  const kept: KeptStepUp = { id: stepUp.id, signUntil: stepUp.signUntil.getTime(), logins };
  await store.writeFile(keptPath(store, workspaceId), `${JSON.stringify(kept)}\n`);
}

/** The kept step-up covering `binding`, while certificates may still be signed under it. */
export async function keptStepUp(
  store: ConfigStore,
  workspaceId: string,
  binding: LoginBinding,
): Promise<string | undefined> {
  const text = await store.readFile(keptPath(store, workspaceId));
  if (text === undefined) return undefined;
  let kept: KeptStepUp;
  try {
    kept = JSON.parse(text) as KeptStepUp;
  } catch {
    return undefined;
  }
  const covers = kept.logins?.some?.((l) => l.targetId === binding.targetId && l.login === binding.login);
  return covers && isId(kept.id) && kept.signUntil - Date.now() > handOverMarginMs ? kept.id : undefined;
}

/**
 * The sshd_config block that puts every login under the agent's control (`wap-agent
 * sshd-config` prints it after the files' lines; it must come last in sshd_config, as every
 * `Match` block):
 *
 * ```
 * Match all
 *   ExposeAuthInfo yes          # sshd writes the key or certificate used to SSH_USER_AUTH
 *   PermitUserRC no             # ~/.ssh/rc would run before the wrapper
 *   SetEnv SHLVL=1 ZDOTDIR=<empty> XDG_CONFIG_HOME=<empty> BASH_ENV= ENV=
 *   ForceCommand <wrapper> --socket <socket> --policy <policy file> --empty-dir <empty>
 * ```
 *
 * sshd runs a forced command for shells, commands and subsystems alike, as `$SHELL -c <cmd>`,
 * so the user's shell starts first. The `SetEnv` values (which override what a client sends
 * with `AcceptEnv`) keep it from reading the user's files before the wrapper: Debian's bash
 * reads ~/.bashrc for a command from sshd only when its shell level is below 2 (SHLVL=1 makes
 * it 2); zsh reads $ZDOTDIR/.zshenv and fish $XDG_CONFIG_HOME/fish (an empty root-owned
 * folder); bash reads $BASH_ENV and sh $ENV (empty). csh and tcsh read ~/.cshrc whatever the
 * environment: accounts with those shells are not protected (docs/agent.md).
 *
 * @module
 */
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { replaceFile } from "./atomic-file.js";

export interface LoginControl {
  /** The wrapper as sshd runs it, e.g. [`/usr/bin/node`, `/usr/lib/wap-agent/session-wrapper.js`]. */
  readonly wrapper: readonly string[];
  readonly socket: string;
  /** The agent's sshd folder: the policy file and the empty folder go there. */
  readonly sshdDir: string;
}

export const loginPolicyFile = (sshdDir: string) => join(sshdDir, "login_policy");
export const emptyDir = (sshdDir: string) => join(sshdDir, "empty");

/**
 * The wrapper installed beside this module, run by this Node: `session-wrapper.js` of the built
 * package; from the sources, the `.ts` through tsx.
 */
export function defaultWrapperCommand(): string[] {
  const fromSources = import.meta.url.endsWith(".ts");
  const wrapper = fileURLToPath(new URL(`./session-wrapper.${fromSources ? "ts" : "js"}`, import.meta.url));
  return fromSources
    ? [process.execPath, "--import", fileURLToPath(import.meta.resolve("tsx")), wrapper]
    : [process.execPath, wrapper];
}

/** A word sshd passes to `$SHELL -c` unchanged: quoted unless it is plainly safe. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function matchBlockLines(control: LoginControl): string[] {
  const empty = emptyDir(control.sshdDir);
  const command = [
    ...control.wrapper,
    "--socket",
    control.socket,
    "--policy",
    loginPolicyFile(control.sshdDir),
    "--empty-dir",
    empty,
  ];
  return [
    "Match all",
    "\tExposeAuthInfo yes",
    "\tPermitUserRC no",
    `\tSetEnv SHLVL=1 ZDOTDIR=${empty} XDG_CONFIG_HOME=${empty} BASH_ENV= ENV=`,
    `\tForceCommand ${command.map(shellWord).join(" ")}`,
  ];
}

/** The empty folder (root's, 0755) the hardened variables point at. */
export async function prepareLoginControl(sshdDir: string): Promise<void> {
  await mkdir(emptyDir(sshdDir), { recursive: true, mode: 0o755 });
  await chmod(emptyDir(sshdDir), 0o755);
}

/**
 * What the wrapper does when the agent cannot be reached: `fail-closed` (refuse, and end live
 * logins when the agent goes away) or `open`. True when the file changed.
 */
export function writeLoginPolicy(sshdDir: string, requireRecording: boolean): Promise<boolean> {
  return replaceFile(loginPolicyFile(sshdDir), requireRecording ? "fail-closed\n" : "open\n", 0o644);
}

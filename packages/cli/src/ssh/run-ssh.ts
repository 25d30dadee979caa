/**
 * Runs the system `ssh` with the terminal handed over: its stdin, stdout and stderr are the
 * user's, and its exit status becomes wap's.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { CliError } from "../exit-codes.js";
import { configValue } from "./ssh-config.js";
import { type Endpoint, type SshFiles, sshSettings, type TargetAddress } from "./targets.js";

/** How one `wap ssh` runs ssh: the target, the login, the files, the checked endpoints. */
export interface LoginPlan {
  readonly target: TargetAddress;
  readonly login: string;
  readonly files: SshFiles;
  readonly endpoints: readonly Endpoint[];
  /** Whether the login is held outright: the authority's shared certificate, no request, no limits. */
  readonly standing: boolean;
  /** Whether the server said the target's agent is offline. */
  readonly agentOffline: boolean;
}

export const sshMissing = () =>
  new CliError("ssh is not installed: install the OpenSSH client (e.g. `apt-get install openssh-client`)");

/**
 * ssh's arguments for one login: wap's settings as `-o` options, the port and the user as their
 * own options, then `--` before the destination, so that nothing from the server, whatever it
 * holds, is read by ssh as an option.
 */
export function sshArguments(
  settings: ReadonlyArray<readonly [string, string]>,
  endpoint: Endpoint,
  login: string,
  command: readonly string[],
): string[] {
  return [
    ...settings.flatMap(([key, value]) => ["-o", `${key}=${configValue(value)}`]),
    "-p",
    String(endpoint.port),
    "-l",
    login,
    "--",
    endpoint.host,
    ...command,
  ];
}

export function runSsh(args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("ssh", args, { stdio: "inherit", env });
    // Ctrl-C belongs to ssh (and the remote side) while it runs.
    const ignore = () => {};
    process.on("SIGINT", ignore);
    const done = () => process.off("SIGINT", ignore);
    child.once("error", (error: NodeJS.ErrnoException) => {
      done();
      reject(error.code === "ENOENT" ? sshMissing() : new CliError(`cannot run ssh: ${error.message}`));
    });
    child.once("close", (code, signal) => {
      done();
      resolve(code ?? (signal === null ? 1 : 128 + signalNumber(signal)));
    });
  });
}

function signalNumber(signal: NodeJS.Signals): number {
  return { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 }[signal as string] ?? 1;
}

/** The first endpoint that accepts a TCP connection within `timeoutMs`, in the order given. */
export async function firstReachable(
  endpoints: readonly Endpoint[],
  timeoutMs = 3_000,
): Promise<Endpoint | undefined> {
  for (const endpoint of endpoints) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: endpoint.host, port: endpoint.port });
      const finish = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(timeoutMs, () => finish(false));
      socket.once("connect", () => finish(true));
      socket.once("error", () => finish(false));
    });
    if (open) return endpoint;
  }
  return undefined;
}

/** Runs ssh as `plan` says, with `command`; resolves to ssh's exit status. */
export async function runPlan(plan: LoginPlan, command: readonly string[], env: NodeJS.ProcessEnv) {
  // With one address there is nothing to choose: ssh connects (and says why it cannot) itself,
  // and sshd is not made to start a connection only to have it dropped.
  const { endpoints } = plan;
  const endpoint = (endpoints.length > 1 ? await firstReachable(endpoints) : undefined) ?? endpoints[0]!;
  return runSsh(sshArguments(sshSettings(plan.files, plan.target), endpoint, plan.login, command), env);
}

/**
 * The user's ssh-agent, through the real `ssh-add`: keys added with a lifetime (`-t`) from
 * standard input, so a private key handed to the agent never touches the disk.
 *
 * @module
 */
import { execFile, spawn } from "node:child_process";
import { CliError } from "../exit-codes.js";

/** Whether an agent answers on `SSH_AUTH_SOCK` (`ssh-add -l` exits 0 with keys, 1 without). */
export async function agentAvailable(env: NodeJS.ProcessEnv): Promise<boolean> {
  if (!env.SSH_AUTH_SOCK) return false;
  const code = await new Promise<number | null>((resolve) => {
    execFile("ssh-add", ["-l"], { env, timeout: 5_000 }, (error) =>
      resolve(error === null ? 0 : typeof error.code === "number" ? error.code : null),
    );
  });
  return code === 0 || code === 1;
}

/** The public keys the agent holds, as `<type> <base64>` (comments dropped). */
export async function agentPublicKeys(env: NodeJS.ProcessEnv): Promise<string[]> {
  return new Promise((resolve) => {
    execFile("ssh-add", ["-L"], { env, timeout: 5_000 }, (error, stdout) => {
      if (error !== null) return resolve([]);
      resolve(
        stdout
          .split("\n")
          .map(withoutComment)
          .filter((line) => line !== ""),
      );
    });
  });
}

export const withoutComment = (line: string) => line.trim().split(/\s+/).slice(0, 2).join(" ");

/** `ssh-add -t <seconds> -` with the openssh-key-v1 text on stdin. */
export function addToAgent(
  env: NodeJS.ProcessEnv,
  privateKey: string,
  lifetimeSeconds: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("ssh-add", ["-q", "-t", String(Math.max(1, lifetimeSeconds)), "-"], {
      env,
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          error.code === "ENOENT"
            ? "ssh-add is not installed: install the OpenSSH client (e.g. `apt-get install openssh-client`)"
            : `ssh-add failed: ${error.message}`,
        ),
      ),
    );
    child.once("close", (code) =>
      code === 0
        ? resolve()
        : reject(
            new CliError(`ssh-add could not add the key to the agent: ${stderr.trim() || `exit ${code}`}`),
          ),
    );
    child.stdin.end(privateKey);
  });
}

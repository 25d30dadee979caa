/**
 * The host agent (`@wap/agent`, the library behind `wap-agent`) on a development machine, with
 * nothing of the system touched: its state, its sshd files and a host key of its own all live
 * in one folder, and it reports `127.0.0.1:2222` as where its sshd would listen. Point an sshd
 * of your own at the printed lines to log in for real (docs/agent.md shows a real host).
 *
 *     node --conditions=dev-source --import tsx examples/local-agent.ts \
 *       --url http://127.0.0.1:8080 --dir /tmp/wap-agent-demo [--token <enrolment token>]
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type Agent, enroll, jsonLineLogger, type Logger, SshdFiles, startAgent } from "@wap/agent";

export interface LocalAgentOptions {
  readonly url: string;
  /** Holds `state/`, `sshd/` and `host_key`. */
  readonly dir: string;
  /** An enrolment token: enrols first (nothing happens when already enrolled). */
  readonly token?: string;
  readonly log?: Logger;
}

export async function startLocalAgent(options: LocalAgentOptions): Promise<Agent> {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const hostKey = join(options.dir, "host_key");
  if (!existsSync(hostKey)) execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey]);
  const stateDir = join(options.dir, "state");
  if (options.token)
    await enroll({ server: options.url, token: options.token, stateDir, name: "local-agent" });
  return startAgent({
    stateDir,
    sshdDir: join(options.dir, "sshd"),
    hostKeyFile: `${hostKey}.pub`,
    sshAddresses: ["127.0.0.1:2222"],
    // Only the account running the demo: the agent can start shells as nobody else unless root.
    users: [userInfo().username],
    ...(options.log && { log: options.log }),
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: "string", default: "http://127.0.0.1:8080" },
      dir: { type: "string", default: ".wap-agent-demo" },
      token: { type: "string" },
    },
  });
  const dir = resolve(values.dir);
  const agent = await startLocalAgent({
    url: values.url,
    dir,
    ...((values.token ?? process.env.WAP_ENROLL_TOKEN) && {
      token: values.token ?? process.env.WAP_ENROLL_TOKEN,
    }),
    log: jsonLineLogger(),
  });
  process.stderr.write(
    `sshd_config lines for these files:\n${new SshdFiles(join(dir, "sshd")).configLines().join("\n")}\n`,
  );
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void agent.stop());
  process.exit((await agent.done).exitCode);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}

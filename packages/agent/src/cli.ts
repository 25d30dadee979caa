/**
 * The `wap-agent` command line (commander).
 *
 * @module
 */
import { isIP } from "node:net";
import { DaemonStatus } from "@wap/api";
import { Command, InvalidArgumentError } from "commander";
import { defaultHostKeyFile, startAgent } from "./agent.js";
import { enroll } from "./enroll.js";
import { exitCodes, explain, NotEnrolledError } from "./errors.js";
import { jsonLineLogger } from "./log.js";
import { principalsCheckMain, principalsCommandLines } from "./principals-check.js";
import { parseSshCertificate } from "./ssh-key.js";
import { defaultSessionsSocket } from "./ssh-logins.js";
import { defaultSshdDir, SshdFiles } from "./sshd-files.js";
import { defaultWrapperCommand, matchBlockLines, prepareLoginControl } from "./sshd-match.js";
import { AgentState, defaultStateDir } from "./state.js";
import { agentVersion } from "./version.js";

/** The sshd_config lines, with the principals command in place of the principals files when asked. */
function withPrincipalsCommand(
  files: SshdFiles,
  opts: { principalsCommand?: string; principalsCommandUser: string },
): string[] {
  const lines = files.configLines();
  if (opts.principalsCommand === undefined) return lines;
  if (!opts.principalsCommand.startsWith("/")) {
    throw new InvalidArgumentError("--principals-command must be an absolute path (sshd requires one)");
  }
  return [
    ...lines.filter((line) => !line.startsWith("AuthorizedPrincipalsFile ")),
    ...principalsCommandLines(opts.principalsCommand.split(" "), files.dir, opts.principalsCommandUser),
  ];
}

/** `ip:port` (IPv6 in brackets), as SyncDaemon takes endpoints. */
/** A size in bytes: a whole number from 1 MiB to 64 GiB. */
function spoolBytes(value: string): number {
  const bytes = Number(value);
  if (!/^\d+$/.test(value) || bytes < 1024 * 1024 || bytes > 64 * 1024 ** 3) {
    throw new InvalidArgumentError("expected a number of bytes from 1048576 (1 MiB) to 68719476736 (64 GiB)");
  }
  return bytes;
}

function sshAddress(value: string, previous: string[] = []): string[] {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const host = match?.[1] ?? match?.[2] ?? "";
  const port = Number(match?.[3]);
  if (!match || isIP(host) === 0 || port < 1 || port > 65_535) {
    throw new InvalidArgumentError("expected ip:port (e.g. 10.0.0.5:22 or [fd00::5]:22)");
  }
  return [...previous, value];
}

export function program(): Command {
  const cli = new Command("wap-agent")
    .description(
      "Enrols this machine with a Workspace Access Platform server and keeps its sshd in step with it.",
    )
    .version(agentVersion)
    .showHelpAfterError();

  cli
    .command("enroll")
    .description("create this machine's key and enrol it with a workspace (PENDING until accepted)")
    .requiredOption("--server <url>", "the platform server, e.g. https://wap.example.com")
    .option(
      "--token <token>",
      "the workspace's enrolment token (or WAP_ENROLL_TOKEN, which keeps it out of ps)",
    )
    .option("--state-dir <dir>", "where the key and the enrolment are kept", defaultStateDir)
    .option("--name <name>", "the name the daemon and its target get (default: the host name)")
    .option(
      "--ca <name or id>",
      "the SSH certificate authority the machine's target trusts (default: the workspace's default one)",
    )
    .action(
      async (opts: { server: string; token?: string; stateDir: string; name?: string; ca?: string }) => {
        const token = opts.token ?? process.env.WAP_ENROLL_TOKEN;
        if (!token)
          cli.error("error: an enrolment token is needed: --token <token> or WAP_ENROLL_TOKEN", {
            exitCode: exitCodes.usage,
          });
        const result = await enroll({
          server: opts.server,
          token: token!,
          stateDir: opts.stateDir,
          ...(opts.name && { name: opts.name }),
          ...(opts.ca && { ca: opts.ca }),
        });
        const { daemonId, targetId, workspaceId } = result.enrolment;
        process.stdout.write(
          result.created
            ? `enrolled: daemon ${daemonId} (target ${targetId}, workspace ${workspaceId}), ${DaemonStatus[result.status ?? DaemonStatus.PENDING]}\n` +
                "an administrator now accepts it (console, or UpdateDaemon with status ACCEPTED); then run `wap-agent run`\n"
            : `already enrolled as daemon ${daemonId}: nothing changed\n`,
        );
      },
    );

  cli
    .command("run")
    .description("keep the control stream open, maintain sshd's files and run web-terminal sessions")
    .option("--state-dir <dir>", "where the key and the enrolment are kept", defaultStateDir)
    .option(
      "--sshd-dir <dir>",
      "where sshd's trusted CA keys, principals and host certificate go",
      defaultSshdDir,
    )
    .option(
      "--reload-command <cmd>",
      "run (with /bin/sh -c) after the host certificate changed, e.g. 'systemctl reload ssh'",
    )
    .option(
      "--ssh-address <ip:port>",
      "an address sshd listens on (repeatable; default: this machine's addresses and sshd's Port)",
      sshAddress,
    )
    .option("--host-key <file>", "the host public key to certify", defaultHostKeyFile)
    .option(
      "--sessions-socket <path>",
      "the Unix socket the session wrapper reports SSH logins to",
      defaultSessionsSocket,
    )
    .option(
      "--ssh-spool-max-bytes <bytes>",
      "the most the files of SSH logins kept while the server cannot be reached hold (default 67108864: 64 MiB)",
      spoolBytes,
    )
    .action(
      async (opts: {
        stateDir: string;
        sshdDir: string;
        reloadCommand?: string;
        sshAddress?: string[];
        hostKey: string;
        sessionsSocket: string;
        sshSpoolMaxBytes?: number;
      }) => {
        const agent = await startAgent({
          stateDir: opts.stateDir,
          sshdDir: opts.sshdDir,
          hostKeyFile: opts.hostKey,
          sessionsSocket: opts.sessionsSocket,
          ...(opts.sshSpoolMaxBytes !== undefined && { sshSpoolMaxBytes: opts.sshSpoolMaxBytes }),
          ...(opts.reloadCommand && { reloadCommand: opts.reloadCommand }),
          ...(opts.sshAddress && { sshAddresses: opts.sshAddress }),
          log: jsonLineLogger(),
        });
        for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void agent.stop());
        const { exitCode, reason } = await agent.done;
        if (exitCode !== 0) process.stderr.write(`wap-agent: ${reason}\n`);
        // Whatever handle is still open (a half-closed connection), the agent is done.
        process.stdout.write("", () => process.exit(exitCode));
      },
    );

  cli
    .command("sshd-config")
    .description(
      "print the sshd_config lines that make sshd use the agent's files (creating the folder and an empty revocation list)",
    )
    .option("--sshd-dir <dir>", "the folder given to `run`", defaultSshdDir)
    .option(
      "--principals-command <program>",
      "have sshd ask this agent program (absolute path) for a login's principals, which enforces host-bound and single-use certificates",
    )
    .option("--principals-command-user <user>", "the user sshd runs the principals command as", "root")
    .option("--sessions-socket <path>", "the socket given to `run`", defaultSessionsSocket)
    .option(
      "--session-wrapper <command>",
      "how sshd starts the session wrapper (default: this Node and the wrapper installed beside this command)",
    )
    .action(
      async (opts: {
        sshdDir: string;
        principalsCommand?: string;
        principalsCommandUser: string;
        sessionsSocket: string;
        sessionWrapper?: string;
      }) => {
        const files = new SshdFiles(opts.sshdDir);
        // sshd refuses every login while RevokedKeys names a missing file.
        await files.prepare();
        await prepareLoginControl(opts.sshdDir);
        const wrapper = opts.sessionWrapper?.split(" ").filter((w) => w !== "") ?? defaultWrapperCommand();
        // The Match block comes last: it runs to the end of the file sshd reads it from.
        const match = matchBlockLines({ wrapper, socket: opts.sessionsSocket, sshdDir: opts.sshdDir });
        process.stdout.write(`${[...withPrincipalsCommand(files, opts), ...match].join("\n")}\n`);
      },
    );

  // Run by bin.ts without loading this command line (sshd runs it at every certificate login).
  cli
    .command("principals-check")
    .description("for sshd's AuthorizedPrincipalsCommand: print a certificate login's principals, or none")
    .option("--sshd-dir <dir>", "the folder given to `run`", defaultSshdDir)
    .argument("<user>", "%u")
    .argument("<type>", "%t")
    .argument("<certificate>", "%k")
    .action(async (user: string, type: string, certificate: string, opts: { sshdDir: string }) => {
      await principalsCheckMain(["--sshd-dir", opts.sshdDir, user, type, certificate], defaultSshdDir);
    });

  cli
    .command("status")
    .description("show the enrolment and what the sshd files hold")
    .option("--state-dir <dir>", "where the key and the enrolment are kept", defaultStateDir)
    .option("--sshd-dir <dir>", "the folder given to `run`", defaultSshdDir)
    .action(async (opts: { stateDir: string; sshdDir: string }) => {
      const enrolment = await new AgentState(opts.stateDir).readEnrolment();
      const files = new SshdFiles(opts.sshdDir);
      const certificate = await files.readHostCertificate();
      let host: Record<string, unknown> | null = null;
      if (certificate !== undefined) {
        try {
          const parsed = parseSshCertificate(certificate);
          host = { principals: parsed.principals, validBefore: parsed.validBefore.toISOString() };
        } catch (error) {
          host = { error: explain(error) };
        }
      }
      const principals = Object.fromEntries(
        [...(await files.readPrincipals())].map(([u, ids]) => [u, ids.length]),
      );
      process.stdout.write(
        `${JSON.stringify({ enrolled: enrolment !== undefined, ...enrolment, hostCertificate: host, logins: principals }, null, 2)}\n`,
      );
      if (!enrolment) process.exitCode = 1;
    });

  return cli;
}

export async function main(argv = process.argv): Promise<number> {
  try {
    await program().parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (error) {
    process.stderr.write(`wap-agent: ${explain(error)}\n`);
    return error instanceof NotEnrolledError ? exitCodes.usage : exitCodes.failed;
  }
}

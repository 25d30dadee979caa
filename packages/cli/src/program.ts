/**
 * The `wap` command line: its commands, options, help and exit codes.
 *
 * @module
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import type { TlsUsage } from "./commands/certs.js";
import { parseDuration } from "./duration.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { printable } from "./output.js";
import type { CommandContext, GlobalOptions } from "./session.js";
import { defaultRenewBeforeMs } from "./ssh/renewal.js";
import { cliVersion } from "./version.js";

export { ExitCode } from "./exit-codes.js";

const exitCodesHelp = `
Exit codes:
  0  success (wap ssh: ssh's own exit status once ssh runs)
  1  an error; the message says what to do
  2  a usage error: unknown command or option, missing or invalid argument
  3  not signed in, or the sign-in is no longer accepted: run \`wap login\`

Environment:
  WAP_SERVER      the server, for a token or a first \`wap login\`
  WAP_TOKEN       a service-account token (never written to disk)
  WAP_CONFIG_DIR  where wap keeps its state (default $XDG_CONFIG_HOME/wap or ~/.config/wap)`;

function duration(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined)
    throw new InvalidArgumentError("expected a duration such as 90s, 5m, 1h30m or 2d (at most a year)");
  return ms;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * Each command's module, loaded when the command runs: start-up stays short (`wap ssh` needs
 * neither the X.509 library nor the browser launcher, `--version` and `--help` need no client).
 */
const commands = {
  audit: () => import("./commands/audit.js"),
  auth: () => import("./commands/auth.js"),
  certs: () => import("./commands/certs.js"),
  configSsh: () => import("./commands/config-ssh.js"),
  lists: () => import("./commands/lists.js"),
  requests: () => import("./commands/requests.js"),
  ssh: () => import("./commands/ssh.js"),
  stepUp: () => import("./commands/step-up.js"),
  webhooks: () => import("./commands/webhooks.js"),
};

function instant(value: string): Date {
  const date = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)
    ? new Date(value)
    : undefined;
  if (date === undefined || Number.isNaN(date.getTime()))
    throw new InvalidArgumentError("expected a date or time such as 2026-11-01 or 2026-11-01T12:00:00Z");
  return date;
}

interface Runner {
  /** The exit status a command asked for (wap ssh passes ssh's on). */
  status: number;
}

/** Builds the program; `runner.status` receives a command's own exit status. */
export function createProgram(runner: Runner, env: NodeJS.ProcessEnv = process.env): Command {
  const program = new Command("wap")
    .description(
      "Sign in to a Workspace Access Platform server and reach machines with short-lived certificates.",
    )
    .version(cliVersion, "-V, --version", "print the version")
    .option("--server <url>", "the server (default: WAP_SERVER, else the one signed in to)")
    .option("--token <token>", "a service-account token (default: WAP_TOKEN); never stored")
    .option("-w, --workspace <name>", "the workspace (default: `wap workspace use`, else your only one)")
    .option("--json", "print results as JSON")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText("after", exitCodesHelp)
    .exitOverride()
    .configureHelp({ showGlobalOptions: true });

  const context = async (command: Command): Promise<CommandContext> =>
    (await import("./session.js")).commandContext(command.optsWithGlobals<GlobalOptions>(), env);
  const action =
    <A extends unknown[]>(body: (ctx: CommandContext, ...args: A) => Promise<unknown>) =>
    async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command;
      const status = await body(await context(command), ...(args.slice(0, -1) as A));
      if (typeof status === "number") runner.status = status;
    };

  program
    .command("login")
    .description("sign in from this device: approve the sign-in in your browser")
    .option("--no-browser", "print the URL only; do not open a browser")
    .action(
      action(async (ctx, options: { browser: boolean }) =>
        (await commands.auth()).login(ctx, { browser: options.browser }),
      ),
    );
  program
    .command("logout")
    .description("sign this device out on the server and remove its keys and certificates")
    .action(action(async (ctx) => (await commands.auth()).logout(ctx)));
  program
    .command("whoami")
    .alias("status")
    .description("show the server, user, device, workspaces and SSH certificates")
    .action(action(async (ctx) => (await commands.auth()).status(ctx)));

  program
    .command("workspaces")
    .description("list your workspaces (* marks the current one)")
    .action(action(async (ctx) => (await commands.lists()).workspaces(ctx)));
  program
    .command("workspace")
    .description("choose the workspace commands act in")
    .command("use")
    .argument("<name>", "a workspace name or id")
    .description("make <name> the current workspace")
    .action(action(async (ctx, name: string) => (await commands.lists()).useWorkspace(ctx, name)));
  program
    .command("targets")
    .description("list the targets you can reach, with their state and your logins")
    .action(action(async (ctx) => (await commands.lists()).targets(ctx)));
  program
    .command("cas")
    .description("list the workspace's certificate authorities")
    .action(action(async (ctx) => (await commands.lists()).cas(ctx)));
  program
    .command("sessions")
    .description("list open terminal sessions on the targets you can reach")
    .action(action(async (ctx) => (await commands.lists()).sessions(ctx)));

  program
    .command("ssh")
    .description("log in to a target with a fresh certificate, through the system ssh")
    .argument("<destination>", "[login@]target: a target name; the login defaults to your first one there")
    .argument("[command...]", "a command to run instead of a shell (after --)")
    .usage("[options] [login@]target [-- command...]")
    .option("--request", "for a login that needs approval: ask for it, wait for the approval, then log in")
    .option("--duration <duration>", "with --request: how long to ask for", duration, 3_600_000)
    .option("--reason <text>", "with --request: why you need access", "")
    .option("--use-request <id>", "for a login that needs approval: the approved request to log in under")
    .action(
      action(
        async (
          ctx,
          destination: string,
          command: string[],
          options: { request?: boolean; duration: number; reason: string; useRequest?: string },
        ) =>
          (await commands.ssh()).ssh(ctx, destination, command, {
            ...(options.request ? { request: { durationMs: options.duration, reason: options.reason } } : {}),
            ...(options.useRequest === undefined ? {} : { useRequest: options.useRequest }),
          }),
      ),
    );

  program
    .command("step-up")
    .description(
      "give your passkey once for logins that require a step-up, then ssh to each of them once within 60 s",
    )
    .argument("[destinations...]", "[login@]target: the logins to cover")
    .option("--all", "every login of the workspace that requires a step-up")
    .action(
      action(async (ctx, destinations: string[], options: { all?: boolean }) =>
        (await commands.stepUp()).stepUp(ctx, destinations, { all: options.all === true }),
      ),
    );

  program
    .command("request")
    .description("ask for just-in-time access to a login on a target; prints the request id and waits")
    .argument("<target>", "a target name or id")
    .requiredOption("--login <user>", "the Unix login to ask for")
    .requiredOption("--duration <duration>", "how long access should last once approved", duration)
    .option("--reason <text>", "why you need access (some grants require one)", "")
    .option("--no-wait", "print the request id and return without waiting for a decision")
    .action(
      action(
        async (
          ctx,
          target: string,
          options: { login: string; duration: number; reason: string; wait: boolean },
        ) =>
          (await commands.requests()).request(ctx, target, {
            login: options.login,
            durationMs: options.duration,
            reason: options.reason,
            wait: options.wait,
          }),
      ),
    );
  program
    .command("requests")
    .description("list your access requests and those you may decide")
    .action(action(async (ctx) => (await commands.requests()).requests(ctx)));
  program
    .command("approve")
    .description("approve an access request")
    .argument("<id>", "the request id (`wap requests` lists them)")
    .option("--reason <text>", "why")
    .action(
      action(async (ctx, id: string, options: { reason?: string }) =>
        (await commands.requests()).decide(ctx, "approve", id, options.reason),
      ),
    );
  program
    .command("deny")
    .description("deny an access request")
    .argument("<id>", "the request id (`wap requests` lists them)")
    .option("--reason <text>", "why")
    .action(
      action(async (ctx, id: string, options: { reason?: string }) =>
        (await commands.requests()).decide(ctx, "deny", id, options.reason),
      ),
    );

  const webhooks = program
    .command("webhooks")
    .description(
      "the workspace's webhook endpoints: every audit event, signed, in order (owners and admins)",
    );
  webhooks
    .command("list")
    .description("list the endpoints and where delivery to each stands")
    .action(action(async (ctx) => (await commands.webhooks()).listWebhooks(ctx)));
  webhooks
    .command("create")
    .description("add an endpoint; prints its signing secret, once")
    .argument("<url>", "the https URL to POST the events to")
    .option("--description <text>", "what it is for", "")
    .option(
      "--event-type <type>",
      "only these audit actions or prefixes (team.create, team.*); repeatable",
      collect,
      [],
    )
    .action(
      action(async (ctx, url: string, options: { description: string; eventType: string[] }) =>
        (await commands.webhooks()).createWebhook(ctx, url, {
          description: options.description,
          eventTypes: options.eventType,
        }),
      ),
    );
  webhooks
    .command("delete")
    .description("delete an endpoint")
    .argument("<id>", "the endpoint id (`wap webhooks list` shows them)")
    .action(action(async (ctx, id: string) => (await commands.webhooks()).deleteWebhook(ctx, id)));
  webhooks
    .command("rotate")
    .description("make a new signing secret; the old one signs beside it for the overlap")
    .argument("<id>", "the endpoint id")
    .option(
      "--overlap <duration>",
      "how long the old secret keeps signing (default 1d, at most 7d)",
      duration,
    )
    .action(
      action(async (ctx, id: string, options: { overlap?: number }) =>
        (await commands.webhooks()).rotateWebhook(ctx, id, options.overlap),
      ),
    );
  webhooks
    .command("test")
    .description("send a webhook.test message now; exits 1 when it is not delivered")
    .argument("<id>", "the endpoint id")
    .action(action(async (ctx, id: string) => (await commands.webhooks()).testWebhook(ctx, id)));
  webhooks
    .command("deliveries")
    .description("the recent delivery attempts to an endpoint, newest first")
    .argument("<id>", "the endpoint id")
    .action(action(async (ctx, id: string) => (await commands.webhooks()).webhookDeliveries(ctx, id)));

  const config = program.command("config").description("write configuration for other tools");
  config
    .command("ssh")
    .description("write an ssh_config for every target you can reach, so plain `ssh <target>` works")
    .addOption(
      new Option(
        "--renew-if-under <duration>",
        "renew a certificate before ssh uses it when it has less left",
      )
        .argParser(duration)
        .default(defaultRenewBeforeMs, "5m"),
    )
    .action(
      action(async (ctx, options: { renewIfUnder: number }) =>
        (await commands.configSsh()).configSsh(ctx, { renewBeforeMs: options.renewIfUnder }),
      ),
    );

  const cert = program.command("cert").description("get certificates");
  cert
    .command("ssh")
    .description("get an SSH user certificate: for --key (written as <key>-cert.pub), or for wap's own key")
    .option("--key <file>", "your public key file (e.g. ~/.ssh/id_ed25519.pub)")
    .option("--ca <name>", "the SSH certificate authority (default: the only or the default one)")
    .option("--ttl <duration>", "the lifetime to ask for (the authority's limits apply)", duration)
    .option(
      "--renew-if-under <duration>",
      "keep wap's certificate while it has more than this left",
      duration,
    )
    .option("-q, --quiet", "print nothing on success")
    .option(
      "--target <id>",
      "with --login: the certificate of one login of a target (the ssh hook of `wap config ssh`)",
    )
    .option("--login <login>", "with --target: the login")
    .action(
      action(
        async (
          ctx,
          options: {
            key?: string;
            ca?: string;
            ttl?: number;
            renewIfUnder?: number;
            quiet?: boolean;
            target?: string;
            login?: string;
          },
        ) =>
          options.target !== undefined || options.login !== undefined
            ? (await commands.stepUp()).loginCertificate(ctx, {
                ca: options.ca ?? "",
                target: options.target ?? "",
                login: options.login ?? "",
                ...(options.renewIfUnder === undefined ? {} : { renewBeforeMs: options.renewIfUnder }),
                quiet: options.quiet === true,
              })
            : (await commands.certs()).certSsh(ctx, {
                ...(options.key === undefined ? {} : { key: options.key }),
                ...(options.ca === undefined ? {} : { ca: options.ca }),
                ...(options.ttl === undefined ? {} : { ttlMs: options.ttl }),
                ...(options.renewIfUnder === undefined ? {} : { renewBeforeMs: options.renewIfUnder }),
                quiet: options.quiet === true,
              }),
      ),
    );
  cert
    .command("tls")
    .description("get an X.509 certificate: writes <name>.crt, <name>.key (with --cn) and <name>-ca.crt")
    .option("--csr <file>", "a PEM certificate request to have signed")
    .option(
      "--cn <name>",
      "make an Ed25519 key and a request for this common name (default for a client certificate: your id)",
    )
    .option(
      "--san <name>",
      "a subject alternative name: DNS name, IP, email or URI (repeatable; default for a server: the CN)",
      collect,
      [],
    )
    .addOption(
      new Option("--usage <usage>", "what the certificate is for")
        .choices(["client", "server", "both"])
        .default("client"),
    )
    .option(
      "--ttl <duration>",
      "the lifetime to ask for (at least 60s; the authority's limits apply)",
      duration,
    )
    .option("--ca <name>", "the X.509 certificate authority (default: the only or the default one)")
    .option("--out <dir>", "where to write the files", ".")
    .action(
      action(
        async (
          ctx,
          options: {
            csr?: string;
            cn?: string;
            san: string[];
            usage: TlsUsage;
            ttl?: number;
            ca?: string;
            out: string;
          },
        ) =>
          (await commands.certs()).certTls(ctx, {
            ...(options.csr === undefined ? {} : { csr: options.csr }),
            ...(options.cn === undefined ? {} : { cn: options.cn }),
            san: options.san,
            usage: options.usage,
            ...(options.ttl === undefined ? {} : { ttlMs: options.ttl }),
            ...(options.ca === undefined ? {} : { ca: options.ca }),
            out: options.out,
          }),
      ),
    );

  const audit = program
    .command("audit")
    .description("the workspace's verifiable audit log: export it, verify it offline");
  audit
    .command("key")
    .description("print (or write) the public key that signs the workspace's audit checkpoints")
    .option("-o, --output <file>", "write the PEM to this file")
    .action(
      action(async (ctx, options: { output?: string }) => (await commands.audit()).auditKey(ctx, options)),
    );
  audit
    .command("export")
    .description("write the audit chain (all of it, or a time window) with its signed checkpoints")
    .addOption(new Option("--format <format>", "the file's format").choices(["json", "csv"]).default("json"))
    .option("--since <time>", "from the first entry at or after this time", instant)
    .option("--until <time>", "to the last entry before this time", instant)
    .requiredOption("-o, --output <file>", "the file to write")
    .addHelpText(
      "after",
      "\nExample:\n  wap audit export --since 2026-11-01 -o audit.json && wap audit key -o audit.pem",
    )
    .action(
      action(async (ctx, options: { format: "json" | "csv"; since?: Date; until?: Date; output: string }) =>
        (await commands.audit()).auditExport(ctx, options),
      ),
    );
  audit
    .command("verify")
    .description("check an export offline: every hash, link and checkpoint; names the first bad entry")
    .argument("<file>", "a file from `wap audit export`")
    .requiredOption("--key <file>", "the workspace's audit public key (PEM, from `wap audit key`)")
    .option(
      "--recording <file>",
      "a session recording file to check against the chain (repeatable)",
      collect,
      [],
    )
    .addHelpText("after", "\nExits 0 when everything verifies, 1 naming the first problem otherwise.")
    .action(
      action(async (ctx, file: string, options: { key: string; recording: string[] }) =>
        (await commands.audit()).auditVerify(ctx, file, options.key, options.recording),
      ),
    );

  // Every subcommand reports usage errors through the same exit path.
  const overrideAll = (command: Command) => {
    command.exitOverride();
    command.showHelpAfterError("(run with --help for usage)");
    for (const sub of command.commands) overrideAll(sub);
  };
  overrideAll(program);
  return program;
}

/**
 * Runs `wap` with `argv` (without node and the script) and returns the exit status. Errors are
 * printed as one line on stderr, never as a stack trace.
 */
export async function run(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const runner: Runner = { status: ExitCode.ok };
  const program = createProgram(runner, env);
  try {
    await program.parseAsync([...argv], { from: "user" });
    return runner.status;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; everything else commander refuses is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const explained = error instanceof CliError ? error : await explainUnexpected(error, env);
    process.stderr.write(`wap: ${printable(explained.message)}\n`);
    return explained.exitCode;
  }
}

async function explainUnexpected(error: unknown, env: NodeJS.ProcessEnv): Promise<CliError> {
  const { ConnectError } = await import("@connectrpc/connect");
  if (error instanceof ConnectError) {
    const { explainRpcError } = await import("./rpc-errors.js");
    const explained = explainRpcError(error, env.WAP_SERVER ?? "the server", "device");
    if (explained instanceof CliError) return explained;
  }
  return new CliError(error instanceof Error ? error.message : String(error));
}

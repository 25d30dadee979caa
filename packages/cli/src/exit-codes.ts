/** The exit status of every `wap` command (`wap ssh` exits with ssh's own status once ssh runs). */
export const ExitCode = {
  ok: 0,
  /** Anything that went wrong: the message says what to do. */
  error: 1,
  /** The command line itself was wrong: an unknown command or option, a missing argument. */
  usage: 2,
  /** No sign-in to use, or the server no longer accepts it: `wap login` (or a valid `WAP_TOKEN`). */
  notSignedIn: 3,
} as const;

/** An error the user can act on: one line, printed as is, with its exit status. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.error,
  ) {
    super(message);
    this.name = "CliError";
  }
}

export const notSignedIn = (what = "not signed in") =>
  new CliError(
    `${what}: run \`wap login --server <url>\`, or set WAP_TOKEN and WAP_SERVER for a service account`,
    ExitCode.notSignedIn,
  );

export const usageError = (message: string) => new CliError(message, ExitCode.usage);

/**
 * The certificate extensions of our own, shared by the core (which signs them) and the host
 * agent (which reads them). The CA's signature covers every extension, so what they say cannot
 * be changed on the host.
 *
 * - `allowed-commands@wap`: the commands the certificate may run, as a JSON array of strings
 *   (each 1 to 1024 printable characters, at most 32). A session's command must equal one of them.
 * - `target@wap` and `single-use@wap`: host-bound, single-use certificates (below).
 *
 * @module
 */

/** The extension holding a certificate's command allowlist. */
export const COMMAND_ALLOWLIST_EXTENSION = "allowed-commands@wap";

/** Bounds a list must keep; the core refuses longer lists, the agent refuses what breaks them. */
export const commandAllowlistBounds = { commands: 32, length: 1024 } as const;

/** The extension's value for `commands`. */
export function encodeCommandAllowlist(commands: readonly string[]): string {
  return JSON.stringify(commands);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
const controlCharacters = /[\u0000-\u001f\u007f]/;

/**
 * The commands an extension value lists, or null when it is not a list of commands within the
 * bounds (a reader then refuses every command).
 */
export function decodeCommandAllowlist(value: string): string[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || parsed.length > commandAllowlistBounds.commands) {
    return null;
  }
  for (const command of parsed) {
    if (
      typeof command !== "string" ||
      command.length === 0 ||
      command.length > commandAllowlistBounds.length ||
      controlCharacters.test(command)
    ) {
      return null;
    }
  }
  return parsed as string[];
}

/**
 * `target@wap`: the id of the one target a certificate is for; the target's agent refuses it
 * anywhere else. `single-use@wap`: accepted once (the agent refuses a serial it has seen).
 */
export const TARGET_EXTENSION = "target@wap";
export const SINGLE_USE_EXTENSION = "single-use@wap";

/** What a certificate allows: any command (no list), or the commands of its list. */
export type Allowlist =
  | { readonly kind: "any" }
  | { readonly kind: "list"; readonly commands: readonly string[] };

/** The list a certificate carries; a list that cannot be read is an empty list (nothing allowed). */
export function allowlistOf(certificate: {
  readonly extensions: Readonly<Record<string, string>>;
}): Allowlist {
  if (!Object.hasOwn(certificate.extensions, COMMAND_ALLOWLIST_EXTENSION)) return { kind: "any" };
  const commands = decodeCommandAllowlist(certificate.extensions[COMMAND_ALLOWLIST_EXTENSION]!);
  return { kind: "list", commands: commands ?? [] };
}

/** A command (or anything from the session) as a message may quote it: printable ASCII, clipped. */
function quoted(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, "?");
  return JSON.stringify(printable.length > 200 ? `${printable.slice(0, 200)}...` : printable);
}

export type CommandDecision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      /** What to tell the user (safe to print: quoted, printable ASCII). */
      readonly message: string;
    };

/**
 * Whether a session may run `command` (undefined or empty: an interactive shell) under
 * `allowlist`. A command is allowed when it equals one entry exactly: no prefix, no pattern, no
 * shell parsing, so `uptime; rm -rf /` is not `uptime`. A shell is refused under a list, and a
 * list that cannot be read refuses everything. The server decides with it when a login begins
 * (and audits a refusal); the agent decides again on its own when the server cannot be reached.
 */
export function decideCommand(allowlist: Allowlist, command: string | undefined): CommandDecision {
  if (allowlist.kind === "any") return { allowed: true };
  if (allowlist.commands.length === 0) {
    return {
      allowed: false,
      message: "this certificate's command list cannot be read: no command is allowed",
    };
  }
  const allowed = `allowed: ${allowlist.commands.map(quoted).join(", ")}`;
  if (command === undefined || command === "") {
    return {
      allowed: false,
      message: `this certificate allows only some commands, not a shell (${allowed})`,
    };
  }
  if (allowlist.commands.includes(command)) return { allowed: true };
  return {
    allowed: false,
    message: `the command ${quoted(command)} is not among those this certificate allows (${allowed})`,
  };
}

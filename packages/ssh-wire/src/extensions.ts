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

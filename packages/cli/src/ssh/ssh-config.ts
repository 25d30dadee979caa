/**
 * The ssh_config file `wap config ssh` writes: one `Match exec` hook per certificate authority
 * that renews its certificate before ssh uses it, then one Host block per target.
 *
 * Every name and value in it comes either from wap itself or from the server's strings checked
 * against the server's own rules (targets.ts); what is written is still checked here once more:
 * a comment is escaped to one line, a Host alias must be a plain name, a value must hold no
 * control character.
 *
 * @module
 */
import { hasControlCharacters } from "@wap/ssh-wire/forms";
import { CliError } from "../exit-codes.js";
import { printable } from "../output.js";

export interface RenewalHook {
  /** The Host aliases whose certificate the hook renews. */
  readonly aliases: readonly string[];
  /** A shell command (run by ssh through the user's shell). */
  readonly command: string;
}

export interface HostBlock {
  readonly alias: string;
  readonly comment: string;
  readonly settings: ReadonlyArray<readonly [string, string]>;
}

/**
 * A value as ssh_config reads it: double-quoted when it holds spaces. A control character would
 * end the line (and start a directive of its own), so a value holding one is refused.
 */
export function configValue(value: string): string {
  if (hasControlCharacters(value))
    throw new CliError(
      `cannot write ${JSON.stringify(value)} into an ssh configuration: it holds a control character`,
    );
  return /[\s"]/.test(value) ? `"${value.replaceAll('"', "")}"` : value;
}

/** Host aliases wap writes: target names, or `<workspace>/<name>`; nothing ssh reads as a pattern. */
const aliasPattern = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)?$/;

function alias(value: string): string {
  if (!aliasPattern.test(value))
    throw new CliError(`cannot use ${JSON.stringify(value)} as an ssh Host alias`);
  return value;
}

export function renderSshConfig(hooks: readonly RenewalHook[], hosts: readonly HostBlock[]): string {
  const lines = [
    "# Written by `wap config ssh`, which rewrites it each time it runs: do not edit.",
    "# Included from ~/.ssh/config, it makes `ssh <target>` use wap's short-lived certificates.",
    "",
  ];
  for (const hook of hooks) {
    // ssh runs the command while reading its configuration, before it loads the certificate.
    // `%` starts a token in ssh_config; the command must not contain a double quote.
    if (hook.command.includes('"') || hasControlCharacters(hook.command))
      throw new CliError(
        "cannot write the renewal command into an ssh configuration: it holds a quote or a control character",
      );
    lines.push(
      `Match originalhost ${hook.aliases.map(alias).join(",")} exec "${hook.command.replaceAll("%", "%%")}"`,
      "",
    );
  }
  for (const host of hosts) {
    // The comment holds names from the server: escaped, it stays one comment line.
    lines.push(`# ${printable(host.comment)}`, `Host ${alias(host.alias)}`);
    for (const [name, value] of host.settings) lines.push(`  ${name} ${configValue(value)}`);
    lines.push("");
  }
  return lines.join("\n");
}

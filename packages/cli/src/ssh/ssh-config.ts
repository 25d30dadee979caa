/**
 * The ssh_config file `wap config ssh` writes: one `Match exec` hook per certificate authority
 * that renews its certificate before ssh uses it, then one Host block per target.
 *
 * @module
 */
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

/** A value as ssh_config reads it: double-quoted when it holds spaces. */
export const configValue = (value: string) =>
  /[\s"]/.test(value) ? `"${value.replaceAll('"', "")}"` : value;

export function renderSshConfig(hooks: readonly RenewalHook[], hosts: readonly HostBlock[]): string {
  const lines = [
    "# Written by `wap config ssh`, which rewrites it each time it runs: do not edit.",
    "# Included from ~/.ssh/config, it makes `ssh <target>` use wap's short-lived certificates.",
    "",
  ];
  for (const hook of hooks) {
    // ssh runs the command while reading its configuration, before it loads the certificate.
    // `%` starts a token in ssh_config; the command must not contain a double quote.
    lines.push(
      `Match originalhost ${hook.aliases.join(",")} exec "${hook.command.replaceAll("%", "%%")}"`,
      "",
    );
  }
  for (const host of hosts) {
    lines.push(`# ${host.comment}`, `Host ${host.alias}`);
    for (const [name, value] of host.settings) lines.push(`  ${name} ${configValue(value)}`);
    lines.push("");
  }
  return lines.join("\n");
}

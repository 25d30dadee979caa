/**
 * The command allowlist a user certificate carries (the `allowed-commands@wap` extension, signed
 * by the CA, so nothing written on the host can widen it), and whether a session may run a
 * command under it. Pure: the session wrapper that sshd runs (ForceCommand, with `ExposeAuthInfo
 * yes`) reads the certificate from `SSH_USER_AUTH` and the command from `SSH_ORIGINAL_COMMAND`,
 * calls {@link decideCommand}, and refuses (printing `message`, auditing it) or runs the command.
 *
 * A command is allowed when it equals one entry of the list exactly: no prefix, no pattern, no
 * shell parsing, so `uptime; rm -rf /` is not `uptime`. A session without a command (a shell)
 * is refused when the certificate has a list. A list that cannot be read refuses everything.
 *
 * @module
 */
import { readSshCertificate, type SshCertificateInfo } from "@wap/ssh-wire";
import { COMMAND_ALLOWLIST_EXTENSION, decodeCommandAllowlist } from "@wap/ssh-wire/extensions";

/** The certificate a session logged in with, from sshd's `SSH_USER_AUTH` file; null when none. */
export function certificateOfUserAuth(text: string): SshCertificateInfo | null {
  for (const line of text.split("\n")) {
    const [method, type, blob] = line.trim().split(/\s+/);
    if (method !== "publickey" || type === undefined || blob === undefined) continue;
    if (!type.endsWith("-cert-v01@openssh.com")) continue;
    try {
      return readSshCertificate(`${type} ${blob}`);
    } catch {
      return null;
    }
  }
  return null;
}

/** What the certificate allows: null for no list (any command), or the commands. */
export type Allowlist =
  | { readonly kind: "any" }
  | { readonly kind: "list"; readonly commands: readonly string[] };

/** The list a certificate carries; a list that cannot be read is an empty list (nothing allowed). */
export function allowlistOf(certificate: Pick<SshCertificateInfo, "extensions">): Allowlist {
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
      /** What to tell the user on stderr (safe to print: quoted, printable ASCII). */
      readonly message: string;
    };

/**
 * Whether a session may run `command` (undefined: an interactive shell) under `allowlist`.
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

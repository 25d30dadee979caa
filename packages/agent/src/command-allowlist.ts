/**
 * The command allowlist a user certificate carries (the `allowed-commands@wap` extension, signed
 * by the CA, so nothing written on the host can widen it), for programs that embed the agent:
 * the certificate of a login from sshd's `SSH_USER_AUTH` file, and the decision, whose one
 * definition is `@wap/ssh-wire/extensions` (the server decides with it too). The agent applies
 * it to each login it registers (ssh-logins.ts).
 *
 * @module
 */
import { readSshCertificate, type SshCertificateInfo } from "@wap/ssh-wire";
import { certificateOfAuthInfo } from "./ssh-logins.js";

/** The certificate a session logged in with, from sshd's `SSH_USER_AUTH` file; null when none. */
export function certificateOfUserAuth(text: string): SshCertificateInfo | null {
  const line = certificateOfAuthInfo(text);
  if (line === undefined) return null;
  try {
    return readSshCertificate(line);
  } catch {
    return null;
  }
}

export type { Allowlist, CommandDecision } from "@wap/ssh-wire/extensions";
export { allowlistOf, decideCommand } from "@wap/ssh-wire/extensions";

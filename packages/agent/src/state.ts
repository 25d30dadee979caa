/**
 * The agent's own state, in one folder (`/var/lib/wap-agent` by default, 0700, files 0600):
 *
 * - `key.pem`: its P-256 signing key, PKCS#8 encrypted with a passphrase derived from the
 *   machine id. That only stops the file from working on another machine; root on this one can
 *   read it (the agent runs as root and needs it unattended).
 * - `enrolment.json`: the server and the ids EnrollDaemon gave. Removed when the daemon is
 *   rejected, so a later `enroll` starts a new enrolment.
 *
 * @module
 */
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { readIfPresent, removeFile, replaceFile } from "./atomic-file.js";
import { UnreadableFileError } from "./errors.js";
import { machineId } from "./machine.js";

export const defaultStateDir = "/var/lib/wap-agent";

export interface Enrolment {
  readonly server: string;
  readonly daemonId: string;
  readonly workspaceId: string;
  readonly targetId: string;
  readonly enrolledAt: string;
}

export class AgentState {
  readonly keyFile: string;
  readonly enrolmentFile: string;

  constructor(readonly dir: string) {
    this.keyFile = join(dir, "key.pem");
    this.enrolmentFile = join(dir, "enrolment.json");
  }

  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await chmod(this.dir, 0o700);
  }

  /**
   * The signing key, created when there is no key file. A key file that cannot be read or
   * decrypted stops the agent: replacing it would destroy the enrolled identity.
   */
  async signingKey(): Promise<KeyObject> {
    const passphrase = createHmac("sha256", "wap-agent").update(machineId()).digest("hex");
    const stored = await readIfPresent(this.keyFile);
    if (stored !== undefined) {
      try {
        return createPrivateKey({ key: stored, passphrase });
      } catch (error) {
        throw new UnreadableFileError(this.keyFile, error);
      }
    }
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const pem = privateKey.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase });
    await replaceFile(this.keyFile, pem, 0o600);
    return privateKey;
  }

  async readEnrolment(): Promise<Enrolment | undefined> {
    const bytes = await readIfPresent(this.enrolmentFile);
    if (bytes === undefined) return undefined;
    try {
      return JSON.parse(bytes.toString("utf8")) as Enrolment;
    } catch (error) {
      throw new UnreadableFileError(this.enrolmentFile, error);
    }
  }

  async writeEnrolment(enrolment: Enrolment): Promise<void> {
    await replaceFile(this.enrolmentFile, `${JSON.stringify(enrolment, null, 2)}\n`, 0o600);
  }

  async forgetEnrolment(): Promise<void> {
    await removeFile(this.enrolmentFile);
  }
}

/** The PEM `PUBLIC KEY` EnrollDaemon registers. */
export function publicKeyPem(key: KeyObject): string {
  return createPublicKey(key).export({ type: "spki", format: "pem" }).toString();
}

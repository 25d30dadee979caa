/**
 * The files the machine's sshd reads, all in one folder (`/etc/ssh/wap` by default), each
 * replaced atomically (atomic-file.ts) and only when its contents change:
 *
 * | file                    | sshd_config                        | what                                            |
 * | ----------------------- | ---------------------------------- | ----------------------------------------------- |
 * | `trusted_user_ca_keys`  | `TrustedUserCAKeys`                | every key of the CA that must verify user certs |
 * | `principals/<username>` | `AuthorizedPrincipalsFile .../%u`  | the subject ids allowed to log in as that user  |
 * | `host_certificate.pub`  | `HostCertificate`                  | the machine's host key, certified by the CA     |
 * | `revoked_keys`          | `RevokedKeys`                      | the CA's key revocation list (OpenSSH KRL)      |
 *
 * sshd reads the trusted keys, the principals and the revocation list at every login, so a
 * change applies to the next login at once; the host certificate is read when sshd starts or
 * reloads. sshd refuses every key when `RevokedKeys` names a missing file, so `prepare` writes
 * an empty list before anything tells sshd about it.
 *
 * Modes: the folders 0755 and the files 0644, owned by the agent (root). sshd opens a
 * principals file as the user logging in, so it must be readable by everyone; nothing in these
 * files is secret (public keys, certificates, subject ids).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { listIfPresent, readIfPresent, removeFile, replaceFile } from "./atomic-file.js";

/** The usernames a principals file may be named after (and the agent accepts from the server). */
export const usernamePattern = /^[a-z_][a-z0-9_-]{0,31}$/;

/**
 * The subject ids a principals file may hold: one word with no blank, quote or comma. sshd
 * reads whatever comes before the last blank of a line as options (`command="..."`), so an id
 * with a blank in it could give a login a forced command or more; such ids are left out.
 */
export const principalPattern = /^[A-Za-z0-9][A-Za-z0-9._@+:-]*$/;

/**
 * One OpenSSH public key or certificate line: its type, its base64, optionally a comment with
 * no control character (a line break in it would start another key).
 */
export const keyLinePattern = /^[a-z][a-z0-9@.-]* [A-Za-z0-9+/]+={0,3}(?: [^\p{Cc}\p{Cf}]*)?$/u;

export const defaultSshdDir = "/etc/ssh/wap";

const fileMode = 0o644;
const dirMode = 0o755;

/**
 * An OpenSSH KRL that revokes nothing: the magic "SSHKRL\n\0", format version 1, then a zero
 * KRL version, generation date and flags, and empty reserved and comment strings.
 */
export function emptyKrl(): Uint8Array {
  const krl = new Uint8Array(44);
  krl.set(Buffer.from("SSHKRL\n\0", "latin1"), 0);
  new DataView(krl.buffer).setUint32(8, 1);
  return krl;
}

/**
 * Whether two KRLs revoke the same keys: equal but for their KRL version and generation date
 * (bytes 12 to 27 of the header), which the server sets to the time it answered. Without this,
 * every sync would replace `revoked_keys`.
 */
export function sameRevocations(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length || a.length < 28) return false;
  return (
    Buffer.from(a.subarray(0, 12)).equals(b.subarray(0, 12)) &&
    Buffer.from(a.subarray(28)).equals(b.subarray(28))
  );
}

export type PrincipalsMap = ReadonlyMap<string, readonly string[]>;

export class SshdFiles {
  readonly trustedUserCaKeys: string;
  readonly principalsDir: string;
  readonly hostCertificate: string;
  readonly revokedKeys: string;

  constructor(readonly dir: string) {
    this.trustedUserCaKeys = join(dir, "trusted_user_ca_keys");
    this.principalsDir = join(dir, "principals");
    this.hostCertificate = join(dir, "host_certificate.pub");
    this.revokedKeys = join(dir, "revoked_keys");
  }

  /** Creates the folders (0755) and, when there is none yet, an empty revocation list. */
  async prepare(): Promise<void> {
    await mkdir(this.principalsDir, { recursive: true, mode: dirMode });
    await chmod(this.dir, dirMode);
    await chmod(this.principalsDir, dirMode);
    if (!existsSync(this.revokedKeys)) await this.#replace(this.revokedKeys, emptyKrl());
  }

  /** The sshd_config lines that make sshd use these files. */
  configLines(): string[] {
    return [
      `TrustedUserCAKeys ${this.trustedUserCaKeys}`,
      `AuthorizedPrincipalsFile ${this.principalsDir}/%u`,
      `HostCertificate ${this.hostCertificate}`,
      `RevokedKeys ${this.revokedKeys}`,
    ];
  }

  /** The authority's KRL, as GetRevocationList returns it; left alone when it revokes the same keys. */
  async writeRevokedKeys(krl: Uint8Array): Promise<boolean> {
    const current = await readIfPresent(this.revokedKeys);
    if (current && sameRevocations(current, krl)) return false;
    return this.#replace(this.revokedKeys, krl);
  }

  /**
   * One line per CA key, as the server lists them (the signing key first); lines that are no
   * key line ({@link keyLinePattern}) are left out.
   */
  writeTrustedUserCaKeys(keys: string): Promise<boolean> {
    const lines = keys
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => keyLinePattern.test(line));
    return this.#replace(this.trustedUserCaKeys, lines.map((line) => `${line}\n`).join(""));
  }

  /** The host certificate: exactly one key line, else nothing is written. */
  writeHostCertificate(line: string): Promise<boolean> {
    const certificate = line.trim();
    if (!keyLinePattern.test(certificate))
      return Promise.reject(new Error("the host certificate is not one OpenSSH certificate line"));
    return this.#replace(this.hostCertificate, `${certificate}\n`);
  }

  async readHostCertificate(): Promise<string | undefined> {
    return (await readIfPresent(this.hostCertificate))?.toString("utf8");
  }

  /**
   * Makes the principals folder hold exactly `map`: one file per username with its subject ids,
   * no file for anyone else (an empty map removes every login). Usernames that cannot be file
   * names, and ids that are not one plain word ({@link principalPattern}), are skipped. True
   * when anything changed.
   */
  async writePrincipals(map: PrincipalsMap): Promise<boolean> {
    let changed = false;
    const wanted = new Map(
      [...map]
        .filter(([username]) => usernamePattern.test(username))
        .map(([username, ids]) => [username, ids.filter((id) => principalPattern.test(id))] as const)
        .filter(([, ids]) => ids.length > 0),
    );
    for (const name of await listIfPresent(this.principalsDir)) {
      if (!wanted.has(name) && !name.startsWith("."))
        changed = (await removeFile(join(this.principalsDir, name))) || changed;
    }
    for (const [username, ids] of wanted) {
      changed =
        (await this.#replace(join(this.principalsDir, username), ids.map((id) => `${id}\n`).join(""))) ||
        changed;
    }
    return changed;
  }

  /** The principals map as the files hold it now. */
  async readPrincipals(): Promise<Map<string, string[]>> {
    const map = new Map<string, string[]>();
    for (const name of await listIfPresent(this.principalsDir)) {
      if (!usernamePattern.test(name)) continue;
      const text = (await readIfPresent(join(this.principalsDir, name)))?.toString("utf8") ?? "";
      map.set(
        name,
        text.split("\n").filter((line) => line !== ""),
      );
    }
    return map;
  }

  /** Whether sshd has what it needs for certificate logins. */
  ready(): boolean {
    return existsSync(this.trustedUserCaKeys) && existsSync(this.hostCertificate);
  }

  #replace(path: string, contents: string | Uint8Array): Promise<boolean> {
    return replaceFile(path, contents, fileMode);
  }
}

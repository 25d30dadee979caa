/**
 * The CLI's state on disk, in one folder readable only by its owner (0700, files 0600):
 *
 * - `config.json`: the server, this device's id, the signed-in user, the chosen workspace;
 * - `device-key.pem`: the device's ECDSA P-256 key (PKCS#8), which signs every request;
 * - `ssh/`: per-authority user keys and certificates, `known_hosts` and the generated `config`.
 *
 * Tokens are never written here: a service-account token only ever comes from the environment
 * or the command line.
 *
 * @module
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CliError } from "./exit-codes.js";

export interface SignedInUser {
  readonly id: string;
  readonly username: string;
  readonly email: string;
  readonly name: string;
}

export interface CliConfig {
  /** The server this device signed in to. */
  readonly server?: string;
  /** `Platform-Client-Device-Id`: made once per sign-in, kept across `wap login` to the same server. */
  readonly deviceId?: string;
  readonly user?: SignedInUser;
  /** The workspace `wap workspace use` chose. */
  readonly workspace?: { readonly id: string; readonly name: string };
}

/** `$WAP_CONFIG_DIR`, else `$XDG_CONFIG_HOME/wap`, else `~/.config/wap`. */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.WAP_CONFIG_DIR) return env.WAP_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, "wap");
  return join(homedir(), ".config", "wap");
}

/** The files of one configuration folder. */
export class ConfigStore {
  constructor(readonly dir: string) {}

  get configFile() {
    return join(this.dir, "config.json");
  }
  get deviceKeyFile() {
    return join(this.dir, "device-key.pem");
  }
  get sshDir() {
    return join(this.dir, "ssh");
  }

  async read(): Promise<CliConfig> {
    const text = await readFile(this.configFile, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw new CliError(`cannot read ${this.configFile}: ${error.message}`);
    });
    if (text === undefined) return {};
    try {
      return JSON.parse(text) as CliConfig;
    } catch {
      throw new CliError(`${this.configFile} is not valid JSON: fix it, or remove it and run \`wap login\``);
    }
  }

  async update(change: (config: CliConfig) => CliConfig): Promise<CliConfig> {
    const next = change(await this.read());
    await this.writeFile(this.configFile, `${JSON.stringify(next, null, 2)}\n`);
    return next;
  }

  async readFile(path: string): Promise<string | undefined> {
    return readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
  }

  /** Writes `text` to `path` inside the folder, 0600, whole or not at all (a temporary file renamed). */
  async writeFile(path: string, text: string): Promise<void> {
    await this.ensureDir(dirname(path));
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, text, { mode: 0o600 });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  }

  /** Creates the folder (and a subfolder) owner-only, tightening one that exists. */
  async ensureDir(path = this.dir): Promise<void> {
    for (const dir of path === this.dir ? [this.dir] : [this.dir, path]) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chmod(dir, 0o700);
    }
  }

  /** Removes everything this CLI wrote for the sign-in: config, device key, SSH keys and certificates. */
  async clear(): Promise<void> {
    await rm(this.configFile, { force: true });
    await rm(this.deviceKeyFile, { force: true });
    await rm(this.sshDir, { recursive: true, force: true });
  }
}

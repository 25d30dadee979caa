/**
 * What the agent reports about the machine and looks up on it: host name, the fingerprint
 * header, local accounts, the addresses sshd listens on.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { arch, networkInterfaces, hostname as osHostname, platform } from "node:os";
import { promisify } from "node:util";
import { UnreadableFileError } from "./errors.js";

const run = promisify(execFile);

export interface LocalAccount {
  readonly username: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
  readonly shell: string;
}

/** One `getent passwd` entry, or undefined when there is no such account. */
export async function findAccount(username: string): Promise<LocalAccount | undefined> {
  try {
    const { stdout } = await run("getent", ["passwd", "--", username]);
    return parsePasswdLine(stdout.trim());
  } catch {
    return undefined; // getent exits 2 for an unknown key
  }
}

function parsePasswdLine(line: string): LocalAccount | undefined {
  const [username, , uid, gid, , home, shell] = line.split(":");
  if (!username || uid === undefined || gid === undefined) return undefined;
  return {
    username,
    uid: Number(uid),
    gid: Number(gid),
    home: home || "/",
    shell: shell || "/bin/sh",
  };
}

const noLoginShell = /(nologin|false|sync|halt|shutdown)$/;

/** Up to `limit` accounts with uid 0 or >= 1000 and a login shell, as SyncDaemon reports them. */
export async function loginAccounts(limit = 20): Promise<string[]> {
  let passwd = "";
  try {
    passwd = (await run("getent", ["passwd"], { maxBuffer: 16 << 20 })).stdout;
  } catch {
    return [];
  }
  return passwd
    .split("\n")
    .map(parsePasswdLine)
    .filter((a): a is LocalAccount => !!a && (a.uid === 0 || (a.uid >= 1000 && a.uid !== 65534)))
    .filter((a) => !noLoginShell.test(a.shell))
    .map((a) => a.username)
    .slice(0, limit);
}

export function machineHostname(): string {
  return osHostname();
}

/** `Platform-Daemon-Fingerprint`: HMAC-SHA256 (key `machine-id`) of the machine id, or of the host name. */
export function machineFingerprint(): string {
  return createHmac("sha256", "machine-id").update(machineId().toLowerCase()).digest("hex");
}

/**
 * The first machine id found, or the host name when there is none. Only a missing file means
 * "none here": one that cannot be read stops the agent, since another source would give another
 * id (and the key file, encrypted with it, could no longer be opened).
 */
export function machineId(): string {
  for (const path of ["/etc/machine-id", "/var/lib/dbus/machine-id", "/sys/class/dmi/id/product_uuid"]) {
    let id: string;
    try {
      id = readFileSync(path, "utf8").trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw new UnreadableFileError(path, error);
    }
    if (id) return id;
  }
  return osHostname();
}

export function machineMetadata(hostname: string): Record<string, string> {
  const goArch: Record<string, string> = { x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" };
  return {
    hostname,
    os: platform() === "win32" ? "windows" : platform(),
    arch: goArch[arch()] ?? arch(),
  };
}

/** Up to 2 IPv4 addresses of real interfaces (no loopback, link-local, container bridges). */
export function machineAddresses(): string[] {
  const skipped = /^(lo|docker|veth|br-|virbr|cni|flannel|cali|vxlan|kube|lxc|podman)/;
  return Object.entries(networkInterfaces())
    .filter(([name]) => !skipped.test(name))
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((a) => a.family === "IPv4" && !a.internal && !a.address.startsWith("169.254."))
    .map((a) => a.address)
    .slice(0, 2);
}

/** The first `Port` of an sshd_config (22 when it names none or cannot be read). */
export function sshdPort(configPath = "/etc/ssh/sshd_config"): number {
  let text = "";
  try {
    text = readFileSync(configPath, "utf8");
  } catch {
    return 22;
  }
  for (const line of text.split("\n")) {
    const match = /^\s*Port\s+(\d{1,5})\s*$/i.exec(line);
    if (match) return Number(match[1]);
  }
  return 22;
}

/**
 * `wap-agent principals-check`, what sshd runs as its `AuthorizedPrincipalsCommand` for every
 * certificate login: it prints the principals of the login (the agent's `principals/<user>` file)
 * unless the certificate is one the host must refuse, and then prints nothing, so sshd refuses it:
 *
 * - **host-bound** (`target@wap`): the certificate names another target than this host's (the
 *   first principal of the host certificate the agent installed);
 * - **single-use** (`single-use@wap`): its serial was used before. The first use is recorded as a
 *   file `used-serials/<serial>` created exclusively (so two logins at once cannot both be the
 *   first), holding when the certificate expires and the connection that used it: sshd asks
 *   twice on one connection (without, then with the signature), and the same connection within
 *   {@link sameConnectionMs} is the same use. The connection is sshd's process for it (the
 *   command's parent, with its start time, so a reused pid is another connection). Entries of
 *   expired certificates (sshd refuses those anyway) are removed once there are more than 1 000;
 *   at most {@link maxUsedSerials} are kept, and when that many are live every single-use
 *   certificate is refused rather than one forgotten.
 *
 * A refusal is written to `refused-certificates/` for the agent to report at its next sync, where
 * the server audits it.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { watch } from "node:fs";
import { mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { readSshCertificate, type SshCertificateInfo } from "@wap/ssh-wire";
import { SINGLE_USE_EXTENSION, TARGET_EXTENSION } from "@wap/ssh-wire/extensions";
import { readIfPresent, replaceFile } from "./atomic-file.js";
import { principalPattern, usernamePattern } from "./sshd-files.js";

export const maxUsedSerials = 10_000;
/** Expired entries are removed once there are more than this many (each login counts them). */
const pruneAbove = 1_000;
export const maxPendingRefusals = 1_000;
export const sameConnectionMs = 60_000;
/** What one SyncDaemon reports at most (the server's bound); the rest waits for the next. */
export const refusalsPerSync = 100;

export interface PrincipalsCheckRequest {
  /** The folder of the agent's sshd files. */
  readonly sshdDir: string;
  /** `%u`, `%t`, `%k` */
  readonly user: string;
  readonly certificateType: string;
  readonly certificateBase64: string;
  /** Which connection asks (connectionOfParent); empty when unknown. */
  readonly connection: string;
  readonly now: Date;
}

export type RefusalReason = "replayed" | "other_target";

/** A refusal waiting to be reported. */
export interface PendingRefusal {
  readonly serial: string;
  readonly reason: RefusalReason;
  readonly refusedAt: Date;
}

const usedDir = (sshdDir: string) => join(sshdDir, "used-serials");
const refusedDir = (sshdDir: string) => join(sshdDir, "refused-certificates");

async function principalsOf(sshdDir: string, user: string): Promise<string[]> {
  if (!usernamePattern.test(user)) return [];
  const text = (await readIfPresent(join(sshdDir, "principals", user)))?.toString("utf8") ?? "";
  return text.split("\n").filter((line) => principalPattern.test(line));
}

async function ownTargetId(sshdDir: string): Promise<string | undefined> {
  const line = (await readIfPresent(join(sshdDir, "host_certificate.pub")))?.toString("utf8");
  if (line === undefined) return undefined;
  try {
    return readSshCertificate(line).principals[0];
  } catch {
    return undefined;
  }
}

async function recordRefusal(sshdDir: string, refusal: PendingRefusal): Promise<void> {
  const dir = refusedDir(sshdDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if ((await readdir(dir)).length >= maxPendingRefusals) return;
  const name = `${refusal.refusedAt.getTime()}-${randomBytes(4).toString("hex")}.json`;
  await replaceFile(
    join(dir, name),
    JSON.stringify({
      serial: refusal.serial,
      reason: refusal.reason,
      refusedAt: refusal.refusedAt.toISOString(),
    }),
    0o600,
  );
}

interface UsedEntry {
  readonly expiresAt: number;
  readonly connection: string;
  readonly firstAt: number;
}

async function readUsed(path: string): Promise<UsedEntry | undefined> {
  try {
    const entry = JSON.parse(await readFile(path, "utf8")) as UsedEntry;
    return typeof entry.expiresAt === "number" ? entry : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the entries of expired certificates; returns how many are left. */
async function pruneUsed(dir: string, now: Date): Promise<number> {
  let left = 0;
  for (const name of await readdir(dir)) {
    const entry = await readUsed(join(dir, name));
    // An entry being written reads as nothing: keep it.
    if (entry !== undefined && entry.expiresAt <= now.getTime()) await rm(join(dir, name), { force: true });
    else left++;
  }
  return left;
}

/** True when this is the certificate's first use (or the same connection asking again). */
async function firstUse(
  sshdDir: string,
  certificate: SshCertificateInfo,
  connection: string,
  now: Date,
): Promise<boolean> {
  const dir = usedDir(sshdDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, certificate.serial.toString());
  const entry: UsedEntry = {
    expiresAt: certificate.validBefore.getTime(),
    connection,
    firstAt: now.getTime(),
  };
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(JSON.stringify(entry));
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const seen = await readUsed(path);
    return (
      seen !== undefined &&
      connection !== "" &&
      seen.connection === connection &&
      now.getTime() - seen.firstAt < sameConnectionMs
    );
  }
  // Bounded: expired entries go once there are many (reading them all costs), and past the bound
  // a certificate is refused rather than a live serial forgotten.
  const count = (await readdir(dir)).length;
  if (count > pruneAbove && (await pruneUsed(dir, now)) > maxUsedSerials) {
    await rm(path, { force: true });
    return false;
  }
  return true;
}

/**
 * The sshd process that runs this command for one connection: its pid and start time (Linux
 * `/proc`); empty where that cannot be read, and then every second check is a replay.
 */
export async function connectionOfParent(): Promise<string> {
  try {
    const stat = await readFile(`/proc/${process.ppid}/stat`, "utf8");
    // Field 22 (start time) counts from the end of the command name, which may hold blanks.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${process.ppid}:${fields[19] ?? ""}`;
  } catch {
    return "";
  }
}

/** The principals to print for this login: none when the certificate must be refused. */
export async function checkPrincipals(request: PrincipalsCheckRequest): Promise<string[]> {
  const { sshdDir, now } = request;
  let certificate: SshCertificateInfo;
  try {
    certificate = readSshCertificate(`${request.certificateType} ${request.certificateBase64}`);
  } catch {
    return [];
  }
  const extensions = certificate.extensions;
  const serial = certificate.serial.toString();
  if (Object.hasOwn(extensions, TARGET_EXTENSION)) {
    const own = await ownTargetId(sshdDir);
    if (own === undefined || extensions[TARGET_EXTENSION] !== own) {
      await recordRefusal(sshdDir, { serial, reason: "other_target", refusedAt: now });
      return [];
    }
  }
  if (Object.hasOwn(extensions, SINGLE_USE_EXTENSION)) {
    if (!(await firstUse(sshdDir, certificate, request.connection, now))) {
      await recordRefusal(sshdDir, { serial, reason: "replayed", refusedAt: now });
      return [];
    }
  }
  return principalsOf(sshdDir, request.user);
}

/** The refusals waiting to be reported, oldest first, at most `limit`, with their files. */
export async function pendingRefusals(
  sshdDir: string,
  limit: number,
): Promise<{ refusals: PendingRefusal[]; files: string[] }> {
  const dir = refusedDir(sshdDir);
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith(".json")).sort();
  } catch {
    return { refusals: [], files: [] };
  }
  const refusals: PendingRefusal[] = [];
  const files: string[] = [];
  for (const name of names.slice(0, limit)) {
    const path = join(dir, name);
    files.push(path);
    try {
      const r = JSON.parse(await readFile(path, "utf8")) as {
        serial: string;
        reason: RefusalReason;
        refusedAt: string;
      };
      if (/^\d{1,20}$/.test(r.serial) && (r.reason === "replayed" || r.reason === "other_target")) {
        refusals.push({ serial: r.serial, reason: r.reason, refusedAt: new Date(r.refusedAt) });
      }
    } catch {
      // Unreadable: dropped with the others once reported.
    }
  }
  return { refusals, files };
}

/** Forgets refusals once the server has them. */
export async function reportedRefusals(files: readonly string[]): Promise<void> {
  await Promise.all(files.map((file) => rm(file, { force: true })));
}

/**
 * The sshd_config lines that make sshd ask the agent, instead of reading the principals files
 * itself (`AuthorizedPrincipalsFile`), which principals a certificate login may use. `program` is
 * the absolute command line of the agent (e.g. `/usr/bin/wap-agent`); sshd runs it as `user`.
 */
export function principalsCommandLines(program: readonly string[], sshdDir: string, user = "root"): string[] {
  return [
    `AuthorizedPrincipalsCommand ${[...program, "principals-check", "--sshd-dir", sshdDir, "%u", "%t", "%k"].join(" ")}`,
    `AuthorizedPrincipalsCommandUser ${user}`,
  ];
}

/**
 * Calls `onRefusal` when sshd's principals command records a refusal, so the agent reports it
 * at once rather than at its next periodic sync. Stops with `signal`.
 */
export async function watchRefusals(
  sshdDir: string,
  onRefusal: () => void,
  signal: AbortSignal,
): Promise<void> {
  const dir = refusedDir(sshdDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const watcher = watch(dir, { signal, persistent: false });
  watcher.on("error", () => {});
  watcher.on("change", (_event, name) => {
    if (String(name).endsWith(".json")) onRefusal();
  });
}

/**
 * `principals-check [--sshd-dir <dir>] <user> <type> <certificate>` without the rest of the
 * command line: sshd runs it twice per certificate login, so it loads only this module. Prints
 * the principals; exits 0 even when there are none (sshd then refuses the login).
 */
export async function principalsCheckMain(args: readonly string[], defaultDir: string): Promise<number> {
  const rest = [...args];
  let sshdDir = defaultDir;
  if (rest[0] === "--sshd-dir") {
    sshdDir = rest[1] ?? "";
    rest.splice(0, 2);
  }
  const [user, certificateType, certificateBase64] = rest;
  if (rest.length !== 3 || sshdDir === "" || !user || !certificateType || !certificateBase64) {
    process.stderr.write(
      "usage: wap-agent principals-check [--sshd-dir <dir>] <user> <type> <certificate>\n",
    );
    return 2;
  }
  const principals = await checkPrincipals({
    sshdDir,
    user,
    certificateType,
    certificateBase64,
    connection: await connectionOfParent(),
    now: new Date(),
  });
  process.stdout.write(principals.map((p) => `${p}\n`).join(""));
  return 0;
}

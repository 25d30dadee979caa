/**
 * Where the tests' sshd comes from: WAP_SSHD, an installed sshd, or Debian's openssh-server
 * package unpacked into a cache folder (never installed: installing it starts a system service).
 * The test prerequisites step calls `findOrInstallSshd` before the first test, so no test waits
 * for the download.
 */
import { execFile } from "node:child_process";
import { access, constants, mkdir, mkdtemp, readdir, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** Where the unpacked openssh-server package is kept between runs. */
export const OPENSSH_CACHE_DIR = join(tmpdir(), "wap-openssh");

export const INSTALL_HINT =
  "On Debian/Ubuntu: `apt-get install -y openssh-client util-linux` and either `apt-get install -y " +
  "--no-install-recommends openssh-server` or let this harness run `apt-get download openssh-server libwrap0`; " +
  "or set WAP_SSHD to an sshd binary.";

export interface SshdBinary {
  readonly path: string;
  /** LD_LIBRARY_PATH entries for an unpacked package (libwrap). */
  readonly libraryPath: readonly string[];
}

export class SshdUnavailableError extends Error {
  constructor(message: string) {
    super(`cannot run a real sshd for tests: ${message}`);
    this.name = "SshdUnavailableError";
  }
}

export function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: options.cwd, timeout: options.timeoutMs ?? 120_000, env: options.env, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { code?: number | string }) | null;
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
        resolve({
          code,
          stdout,
          stderr,
          ...(err !== null && typeof err.code === "string" ? { error: err } : {}),
        });
      },
    );
  });
}

export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function libraryDirs(root: string): Promise<string[]> {
  const dirs: string[] = [];
  for (const base of ["usr/lib", "lib"]) {
    const entries = await readdir(join(root, base)).catch(() => [] as string[]);
    for (const entry of entries) if (entry.includes("-linux-")) dirs.push(join(root, base, entry));
  }
  return dirs;
}

/** Downloads and unpacks openssh-server and libwrap0 into the cache, without installing anything. */
async function unpackOpenSshServer(): Promise<void> {
  await mkdir(OPENSSH_CACHE_DIR, { recursive: true });
  const work = await mkdtemp(join(OPENSSH_CACHE_DIR, "download-"));
  try {
    const download = () => run("apt-get", ["download", "openssh-server", "libwrap0"], { cwd: work });
    let result = await download();
    if (result.error?.code === "ENOENT") {
      throw new SshdUnavailableError(`sshd is not installed and apt-get is not available. ${INSTALL_HINT}`);
    }
    if (result.code !== 0) {
      // Fresh containers have no package lists yet.
      const update = await run("apt-get", ["update"], { timeoutMs: 300_000 });
      if (update.code !== 0) {
        throw new SshdUnavailableError(
          `\`apt-get download openssh-server libwrap0\` failed (${result.stderr.trim()}) and \`apt-get update\` failed too (${update.stderr.trim()}). ${INSTALL_HINT}`,
        );
      }
      result = await download();
      if (result.code !== 0) {
        throw new SshdUnavailableError(
          `\`apt-get download openssh-server libwrap0\` failed: ${result.stderr.trim()}. ${INSTALL_HINT}`,
        );
      }
    }
    const root = join(work, "root");
    for (const deb of (await readdir(work)).filter((f) => f.endsWith(".deb"))) {
      const unpacked = await run("dpkg-deb", ["-x", join(work, deb), root]);
      if (unpacked.code !== 0) {
        throw new SshdUnavailableError(
          `\`dpkg-deb -x ${deb}\` failed: ${unpacked.error?.code === "ENOENT" ? "dpkg-deb is not installed" : unpacked.stderr.trim()}`,
        );
      }
    }
    // Parallel test files may race here; rename is atomic and the loser's copy is dropped.
    await rename(root, join(OPENSSH_CACHE_DIR, "root")).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

let binary: Promise<SshdBinary> | undefined;

/**
 * Finds sshd: `WAP_SSHD`, then PATH (and the sbin folders), then the cache; otherwise unpacks the
 * Debian package into the cache.
 */
export function findOrInstallSshd(): Promise<SshdBinary> {
  binary ??= (async () => {
    const fromEnv = process.env.WAP_SSHD;
    if (fromEnv !== undefined && fromEnv !== "") {
      if (!(await isExecutable(fromEnv)))
        throw new SshdUnavailableError(`WAP_SSHD=${fromEnv} is not executable`);
      return { path: fromEnv, libraryPath: [] };
    }
    const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin"];
    for (const dir of dirs) {
      if (dir !== "" && dir.startsWith("/") && (await isExecutable(join(dir, "sshd")))) {
        return { path: join(dir, "sshd"), libraryPath: [] };
      }
    }
    const cached = join(OPENSSH_CACHE_DIR, "root", "usr", "sbin", "sshd");
    if (!(await isExecutable(cached))) await unpackOpenSshServer();
    if (!(await isExecutable(cached))) throw new SshdUnavailableError(`unpacking did not produce ${cached}`);
    return { path: cached, libraryPath: await libraryDirs(join(OPENSSH_CACHE_DIR, "root")) };
  })();
  // A failed lookup is retried by the next caller rather than cached.
  binary.catch(() => {
    binary = undefined;
  });
  return binary;
}

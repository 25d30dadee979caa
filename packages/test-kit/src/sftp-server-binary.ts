/**
 * Where the tests' sftp-server comes from (sftp logins, and scp, run it as sshd's subsystem):
 * WAP_SFTP_SERVER, an installed one, or Debian's openssh-sftp-server package unpacked into a cache
 * folder (from apt's archive when it holds the package, otherwise `apt-get download`), never
 * installed.
 */
import { mkdir, mkdtemp, readdir, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isExecutable, run, SshdUnavailableError } from "./sshd-binary.js";

const cacheDir = join(tmpdir(), "wap-openssh-sftp");
const relative = join("usr", "lib", "openssh", "sftp-server");
const aptArchive = "/var/cache/apt/archives";

async function unpack(): Promise<void> {
  await mkdir(cacheDir, { recursive: true });
  const work = await mkdtemp(join(cacheDir, "download-"));
  try {
    let deb = (await readdir(aptArchive).catch(() => [] as string[])).find((f) =>
      /^openssh-sftp-server_.*\.deb$/.test(f),
    );
    let debPath = deb === undefined ? "" : join(aptArchive, deb);
    if (deb === undefined) {
      const download = await run("apt-get", ["download", "openssh-sftp-server"], { cwd: work });
      deb = (await readdir(work)).find((f) => f.endsWith(".deb"));
      if (download.code !== 0 || deb === undefined) {
        throw new SshdUnavailableError(
          `sftp-server is not installed and \`apt-get download openssh-sftp-server\` failed: ${download.stderr.trim() || download.error?.code}. Install openssh-sftp-server or set WAP_SFTP_SERVER.`,
        );
      }
      debPath = join(work, deb);
    }
    const root = join(work, "root");
    const unpacked = await run("dpkg-deb", ["-x", debPath, root]);
    if (unpacked.code !== 0)
      throw new SshdUnavailableError(`\`dpkg-deb -x ${deb}\` failed: ${unpacked.stderr.trim()}`);
    // Parallel test files may race here; rename is atomic and the loser's copy is dropped.
    await rename(root, join(cacheDir, "root")).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

let binary: Promise<string> | undefined;

/** The path of an sftp-server to name in sshd's `Subsystem sftp`. */
export function findOrInstallSftpServer(): Promise<string> {
  binary ??= (async () => {
    const fromEnv = process.env.WAP_SFTP_SERVER;
    if (fromEnv !== undefined && fromEnv !== "") {
      if (!(await isExecutable(fromEnv)))
        throw new SshdUnavailableError(`WAP_SFTP_SERVER=${fromEnv} is not executable`);
      return fromEnv;
    }
    for (const path of [
      "/usr/lib/openssh/sftp-server",
      "/usr/libexec/openssh/sftp-server",
      "/usr/lib/sftp-server",
    ]) {
      if (await isExecutable(path)) return path;
    }
    const cached = join(cacheDir, "root", relative);
    if (!(await isExecutable(cached))) await unpack();
    if (!(await isExecutable(cached))) throw new SshdUnavailableError(`unpacking did not produce ${cached}`);
    return cached;
  })();
  // A failed lookup is retried by the next caller rather than cached.
  binary.catch(() => {
    binary = undefined;
  });
  return binary;
}

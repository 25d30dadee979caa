/**
 * A real OpenSSH sshd on a loopback port for tests, started in a private mount namespace: the
 * Debian package unpacked into a cache folder (nothing installed, no user added), run in a private
 * mount namespace that sees a copy of /etc/passwd with the `sshd` privilege-separation user and a
 * fresh tmpfs on /run. As a non-root user, sshd runs without privilege separation and needs neither.
 *
 * When sshd cannot be run at all, `startSshd` throws and says what is missing: tests that use it
 * fail rather than skip.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { opensshPrivateKey, sshPublicKeyLine } from "@wap/ssh-wire";
import {
  findOrInstallSshd,
  INSTALL_HINT,
  run,
  type SshdBinary,
  SshdUnavailableError,
} from "./sshd-binary.js";

/** The private mount namespace could not be set up (no CAP_SYS_ADMIN, e.g. an unprivileged container). */
class NamespaceError extends SshdUnavailableError {
  constructor(log: string) {
    super(
      `the private mount namespace could not be set up (\`unshare -m\`, mount tmpfs /run, bind-mount /etc/passwd): ${log}. ` +
        "Run the tests as root with CAP_SYS_ADMIN (e.g. a privileged container), as a non-root user, or as root " +
        "with openssh-server installed (`apt-get install -y openssh-server && mkdir -p /run/sshd`).",
    );
    this.name = "NamespaceError";
  }
}

export interface StartSshdOptions {
  /** authorized_keys lines of the CAs sshd trusts for user certificates (TrustedUserCAKeys). */
  readonly trustedUserCaKeys?: readonly string[];
  /** The AuthorizedPrincipalsFile contents per login user. */
  readonly principalsForUser?: Readonly<Record<string, readonly string[]>>;
  /**
   * sshd_config lines that replace the harness's own TrustedUserCAKeys, AuthorizedPrincipalsFile
   * and HostCertificate lines (e.g. what `wap-agent sshd-config` prints); the two options above
   * are then ignored.
   */
  readonly authConfig?: readonly string[];
  /** PKCS#8 DER of the host key; a fresh Ed25519 key when omitted. */
  readonly hostKeyPkcs8?: Uint8Array;
  /** A host certificate line for that host key (HostCertificate). */
  readonly hostCertificate?: string;
  /**
   * The KRL sshd starts with (RevokedKeys), as an agent writes it; `writeRevokedKeys` replaces it.
   * Without it sshd reads no revocation list.
   */
  readonly revokedKeys?: Uint8Array;
  /**
   * More /etc/passwd lines sshd sees (run as root, in its private mount namespace only), e.g. an
   * account with uid 0 whose home is a test folder, so its rc files are the test's.
   */
  readonly passwdLines?: readonly string[];
}

export interface SshArgs {
  /** Path of the private key (openssh-key-v1, mode 0600). */
  readonly identityFile: string;
  /** Path of the `-cert.pub` file. */
  readonly certificateFile: string;
  /** A known_hosts line (e.g. `@cert-authority * <ca>`): StrictHostKeyChecking=yes with only that line. Without it, host keys are not checked. */
  readonly knownHostsLine?: string;
  /** The name the host certificate must carry as principal (the CLI sets HostKeyAlias to the target id). */
  readonly hostKeyAlias?: string;
  /** Login user; the user sshd runs as when omitted. */
  readonly user?: string;
  /** More client arguments before the host (e.g. `-o BindAddress=127.0.0.2`, `-tt`, `-R ...`). */
  readonly clientArgs?: readonly string[];
  readonly command: string;
}

export interface SshResult {
  /** Exit code of `ssh`; 255 means ssh itself failed (refused login, host key mismatch). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunningSshd {
  readonly host: string;
  readonly port: number;
  /** The login user the principals files are meant for: the user running the tests. */
  readonly user: string;
  /** The host key as an authorized_keys line. */
  readonly hostKeyLine: string;
  /** sshd's process id (SIGHUP makes it re-read its configuration and host certificate). */
  readonly pid: number;
  /** Sends SIGHUP and waits until sshd listens again. */
  reload(): Promise<void>;
  /** sshd's own log so far (LogLevel VERBOSE), for assertions and failure messages. */
  logs(): string;
  ssh(args: SshArgs): Promise<SshResult>;
  /** Replaces the RevokedKeys file (atomically, as an agent does); sshd reads it at each login. */
  writeRevokedKeys(krl: Uint8Array): Promise<void>;
  /** Replaces the TrustedUserCAKeys file; sshd reads it at each login. */
  writeTrustedUserCaKeys(lines: readonly string[]): Promise<void>;
  /** Replaces a login's AuthorizedPrincipalsFile (as an agent does after a sync); read at each login. */
  writePrincipals(user: string, principals: readonly string[]): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === "object") resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}

/** /etc/passwd plus the `sshd` user that privilege separation drops to, under an unused uid. */
async function passwdWithSshdUser(): Promise<string> {
  const passwd = await readFile("/etc/passwd", "utf8");
  const lines = passwd.split("\n").filter((l) => l !== "");
  if (lines.some((l) => l.startsWith("sshd:"))) return `${lines.join("\n")}\n`;
  const used = new Set(lines.map((l) => Number(l.split(":")[2])));
  let uid = 100;
  while (used.has(uid)) uid++;
  return `${[...lines, `sshd:x:${uid}:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin`].join("\n")}\n`;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

// Inside the namespace: a private /run with the privsep chroot, the passwd copy, then sshd itself.
const NAMESPACE_SCRIPT = [
  "set -e",
  "mount -t tmpfs -o mode=755 tmpfs /run",
  "mkdir -m 755 /run/sshd",
  'mount --bind "$1" /etc/passwd',
  'exec "$2" -D -e -f "$3"',
].join("\n");

interface Started {
  readonly child: ChildProcess;
  readonly log: () => string;
}

/**
 * `namespace`: root, in a private mount namespace. `direct`: sshd as is, either as a
 * non-root user (no privilege separation) or as root on a machine whose openssh-server install
 * already provides the `sshd` user and /run/sshd.
 */
type LaunchMode = "namespace" | "direct";

/** Whether root can run sshd without the namespace: the package's own privsep user and folder exist. */
async function systemPrivsepReady(): Promise<boolean> {
  const passwd = await readFile("/etc/passwd", "utf8").catch(() => "");
  const hasUser = passwd.split("\n").some((l) => l.startsWith("sshd:"));
  return hasUser && (await isDirectory("/run/sshd"));
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

function launch(
  bin: SshdBinary,
  config: string,
  passwdFile: string,
  port: number,
  mode: LaunchMode,
): Promise<Started> {
  const env = { ...process.env };
  if (bin.libraryPath.length > 0) {
    env.LD_LIBRARY_PATH = [...bin.libraryPath, env.LD_LIBRARY_PATH ?? ""].filter((p) => p !== "").join(":");
  }
  const [file, args] =
    mode === "namespace"
      ? ([
          "unshare",
          [
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            NAMESPACE_SCRIPT,
            "sh",
            passwdFile,
            bin.path,
            config,
          ],
        ] as const)
      : ([bin.path, ["-D", "-e", "-f", config]] as const);
  const child = spawn(file, args, { env, stdio: ["ignore", "ignore", "pipe"] });
  running.add(child);
  let log = "";
  child.stderr?.setEncoding("utf8");

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new SshdUnavailableError(`sshd did not report listening within 15 s. Its log:\n${log}`));
    }, 15_000);
    const onData = (chunk: string) => {
      log += chunk;
      if (log.includes(`Server listening on 127.0.0.1 port ${port}.`)) {
        clearTimeout(timer);
        resolve({ child, log: () => log });
      }
    };
    child.stderr?.on("data", onData);
    child.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      running.delete(child);
      reject(
        new SshdUnavailableError(
          err.code === "ENOENT"
            ? `\`${file}\` is not installed (${mode === "namespace" ? "util-linux" : "sshd"})`
            : err.message,
        ),
      );
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      if (mode === "namespace" && /^(unshare|mount|mkdir|sh):/m.test(log)) {
        reject(new NamespaceError(log.trim()));
        return;
      }
      reject(Object.assign(new Error(`sshd exited (${code ?? signal}) before listening:\n${log}`), { log }));
    });
  });
}

/**
 * Starts sshd on a free loopback port trusting `trustedUserCaKeys`, and returns a handle whose
 * `ssh` runs the real OpenSSH client against it. Always `stop()` it (afterAll).
 *
 * @example
 * const sshd = await startSshd({ trustedUserCaKeys: [ca.publicKeyLine], principalsForUser: { root: [userId] } });
 * const { stdout } = await sshd.ssh({ identityFile, certificateFile, command: "echo ok" });
 */
export async function startSshd(options: StartSshdOptions): Promise<RunningSshd> {
  const ssh = await run("ssh", ["-V"]);
  if (ssh.error?.code === "ENOENT")
    throw new SshdUnavailableError(`the ssh client is not installed. ${INSTALL_HINT}`);
  const bin = await findOrInstallSshd();

  const dir = await mkdtemp(join(tmpdir(), "wap-sshd-"));
  const user = userInfo().username;
  const hostKeyPkcs8 =
    options.hostKeyPkcs8 ??
    new Uint8Array(generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }));
  const hostKeyFile = join(dir, "host_key");
  await writeFile(hostKeyFile, opensshPrivateKey(hostKeyPkcs8), { mode: 0o600 });
  const hostKeyLine = sshPublicKeyLine(
    createPrivateKey({ key: Buffer.from(hostKeyPkcs8), format: "der", type: "pkcs8" }),
  );

  const caFile = join(dir, "trusted_user_ca_keys");
  await writeFile(caFile, (options.trustedUserCaKeys ?? []).map((l) => `${l}\n`).join(""));
  await mkdir(join(dir, "principals"));
  for (const [name, principals] of Object.entries(options.principalsForUser ?? {})) {
    await writeFile(join(dir, "principals", name), principals.map((p) => `${p}\n`).join(""));
  }
  const passwdFile = join(dir, "passwd");
  await writeFile(
    passwdFile,
    `${[(await passwdWithSshdUser()).trimEnd(), ...(options.passwdLines ?? [])].join("\n")}\n`,
  );
  const revokedKeysFile = join(dir, "revoked_keys");
  const replace = async (file: string, data: Uint8Array | string) => {
    await writeFile(`${file}.tmp`, data);
    await rename(`${file}.tmp`, file);
  };
  if (options.revokedKeys !== undefined) await replace(revokedKeysFile, options.revokedKeys);
  let hostCertificateLine = "";
  if (options.hostCertificate !== undefined) {
    await writeFile(join(dir, "host_key-cert.pub"), `${options.hostCertificate.trim()}\n`);
    hostCertificateLine = `HostCertificate ${join(dir, "host_key-cert.pub")}\n`;
  }

  // A Match block of the given lines applies to the end of the file: it goes after the harness's.
  const given = options.authConfig ?? [];
  const matchAt = given.findIndex((l) => /^Match\s/i.test(l));
  const globalAuth = matchAt < 0 ? given : given.slice(0, matchAt);
  const matchBlock = matchAt < 0 ? [] : given.slice(matchAt);
  let started: Started | undefined;
  let port = 0;
  let mode: LaunchMode = process.getuid?.() === 0 ? "namespace" : "direct";
  for (let attempt = 0; started === undefined; attempt++) {
    port = await freePort();
    const config = join(dir, "sshd_config");
    await writeFile(
      config,
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${hostKeyFile}`,
        ...(options.authConfig
          ? globalAuth
          : [
              hostCertificateLine.trimEnd(),
              `TrustedUserCAKeys ${caFile}`,
              options.revokedKeys === undefined ? "" : `RevokedKeys ${revokedKeysFile}`,
              `AuthorizedPrincipalsFile ${join(dir, "principals")}/%u`,
            ]),
        "AuthorizedKeysFile none",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        `PidFile ${join(dir, "sshd.pid")}`,
        "LogLevel VERBOSE",
        ...matchBlock,
        "",
      ]
        .filter((l, i, all) => l !== "" || i === all.length - 1)
        .join("\n"),
    );
    try {
      started = await launch(bin, config, passwdFile, port, mode);
    } catch (err) {
      if (err instanceof NamespaceError && mode === "namespace" && (await systemPrivsepReady())) {
        mode = "direct";
        continue;
      }
      // Another process may have taken the port between freePort() and bind().
      const log = (err as { log?: string }).log ?? "";
      if (attempt < 4 && /Address already in use|Cannot bind any address/.test(log)) continue;
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }
  const { child, log } = started;
  let calls = 0;

  return {
    host: "127.0.0.1",
    port,
    user,
    hostKeyLine,
    pid: child.pid ?? -1,
    logs: log,
    async reload() {
      const before = log().length;
      child.kill("SIGHUP");
      const deadline = Date.now() + 15_000;
      while (!log().slice(before).includes(`Server listening on 127.0.0.1 port ${port}.`)) {
        if (Date.now() > deadline) throw new Error(`sshd did not listen again after SIGHUP:\n${log()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    writeRevokedKeys: (krl) => replace(revokedKeysFile, krl),
    writeTrustedUserCaKeys: (lines) => replace(caFile, lines.map((l) => `${l}\n`).join("")),
    writePrincipals: (user, principals) =>
      replace(join(dir, "principals", user), principals.map((p) => `${p}\n`).join("")),
    async ssh(args) {
      const knownHosts = join(dir, `known_hosts-${++calls}`);
      await writeFile(knownHosts, args.knownHostsLine === undefined ? "" : `${args.knownHostsLine}\n`);
      const options = [
        "-F",
        "/dev/null",
        "-p",
        String(port),
        "-l",
        args.user ?? user,
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        `IdentityFile=${args.identityFile}`,
        "-o",
        `CertificateFile=${args.certificateFile}`,
        "-o",
        "PreferredAuthentications=publickey",
        "-o",
        `UserKnownHostsFile=${knownHosts}`,
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        `StrictHostKeyChecking=${args.knownHostsLine === undefined ? "no" : "yes"}`,
        "-o",
        "UpdateHostKeys=no",
        "-o",
        "ConnectTimeout=10",
        ...(args.hostKeyAlias === undefined ? [] : ["-o", `HostKeyAlias=${args.hostKeyAlias}`]),
        ...(args.clientArgs ?? []),
        "127.0.0.1",
        args.command,
      ];
      const env = { ...process.env };
      delete env.SSH_AUTH_SOCK;
      const result = await run("ssh", options, { env, timeoutMs: 30_000 });
      return { code: result.code, stdout: result.stdout, stderr: result.stderr };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      running.delete(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

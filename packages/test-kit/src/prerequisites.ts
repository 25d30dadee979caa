/**
 * The programs the test suite drives, and the Debian packages that bring them: the one list.
 * `pnpm test` checks it before the first test (vitest's global set-up) and `.ci/run` runs the same
 * step, so a fresh machine needs nothing installed by hand. As root with apt-get, what is missing is
 * installed; otherwise the step stops at once and prints the command that would install it.
 */
import { execFile } from "node:child_process";
import { access, constants, readdir } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { findOrInstallSftpServer } from "./sftp-server-binary.js";
import { findOrInstallSshd, OPENSSH_CACHE_DIR } from "./sshd-binary.js";

export interface Prerequisite {
  /** What is looked for, as a person would check it. */
  readonly what: string;
  /** The Debian package that provides it. */
  readonly debianPackage: string;
  /** Which tests need it. */
  readonly why: string;
  readonly isPresent: (path: string) => Promise<boolean>;
}

async function isExecutable(file: string): Promise<boolean> {
  return access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}

async function onPath(program: string, path: string): Promise<boolean> {
  for (const dir of path.split(delimiter)) {
    if (dir.startsWith("/") && (await isExecutable(join(dir, program)))) return true;
  }
  return false;
}

const commands =
  (...programs: string[]) =>
  async (path: string): Promise<boolean> => {
    for (const program of programs) if (!(await onPath(program, path))) return false;
    return true;
  };

const file = (candidate: string) => async () =>
  access(candidate).then(
    () => true,
    () => false,
  );

/** The interop tests run Debian's own Python (/usr/bin/python3), not whichever python3 PATH finds first. */
const pythonModule = (module: string) => () =>
  new Promise<boolean>((resolve) => {
    execFile("/usr/bin/python3", ["-c", `import ${module}`], { timeout: 30_000 }, (error) =>
      resolve(error === null),
    );
  });

export const PREREQUISITES: readonly Prerequisite[] = [
  {
    what: "ssh, ssh-keygen, ssh-agent, ssh-add",
    debianPackage: "openssh-client",
    why: "certificates and logins are judged by the real OpenSSH client",
    isPresent: commands("ssh", "ssh-keygen", "ssh-agent", "ssh-add"),
  },
  {
    what: "openssl",
    debianPackage: "openssl",
    why: "X.509 certificates, CRLs and TLS are checked with the openssl command",
    isPresent: commands("openssl"),
  },
  {
    what: "unshare, setpriv",
    debianPackage: "util-linux",
    why: "the tests' sshd runs in a private mount namespace; some tests run as an unprivileged user",
    isPresent: commands("unshare", "setpriv"),
  },
  {
    what: "dpkg-deb",
    debianPackage: "dpkg",
    why: "the tests' sshd is unpacked from Debian's openssh-server package",
    isPresent: commands("dpkg-deb"),
  },
  {
    what: "systemd-analyze",
    debianPackage: "systemd",
    why: "the release test checks the Debian packages' systemd units with systemd-analyze verify",
    isPresent: commands("systemd-analyze"),
  },
  {
    what: "sqlite3",
    debianPackage: "sqlite3",
    why: "a migration test edits a database file as an earlier release left it",
    isPresent: commands("sqlite3"),
  },
  {
    what: "softhsm2-util",
    debianPackage: "softhsm2",
    why: "the PKCS#11 tests keep CA keys in a throwaway SoftHSM2 token",
    isPresent: commands("softhsm2-util"),
  },
  {
    what: "protoc",
    debianPackage: "protobuf-compiler",
    why: "the published protos must compile with Debian's protoc 3.21",
    isPresent: commands("protoc"),
  },
  {
    what: "/usr/include/google/protobuf/timestamp.proto",
    debianPackage: "libprotobuf-dev",
    why: "protoc needs the well-known types to compile the published protos",
    isPresent: file("/usr/include/google/protobuf/timestamp.proto"),
  },
  {
    what: "/usr/bin/grpc_python_plugin",
    debianPackage: "protobuf-compiler-grpc",
    why: "the interop tests generate Python gRPC stubs from the published protos",
    isPresent: file("/usr/bin/grpc_python_plugin"),
  },
  {
    what: "Python module grpc",
    debianPackage: "python3-grpcio",
    why: "a real gRPC client (Python grpcio) calls the server in the interop tests",
    isPresent: pythonModule("grpc"),
  },
  {
    what: "Python module google.protobuf",
    debianPackage: "python3-protobuf",
    why: "the Python gRPC stubs need the protobuf runtime",
    isPresent: pythonModule("google.protobuf"),
  },
  {
    what: "curl",
    debianPackage: "curl",
    why: "the interop tests call the server with curl",
    isPresent: commands("curl"),
  },
  {
    what: "asciinema",
    debianPackage: "asciinema",
    why: "the recordings of SSH logins must be files asciinema itself reads (asciinema cat)",
    isPresent: commands("asciinema"),
  },
  {
    what: "chromium",
    debianPackage: "chromium",
    why: "the console's browser tests drive Debian's chromium with playwright-core",
    isPresent: commands("chromium"),
  },
];

/** The prerequisites this machine lacks, looked up on `path`. */
export async function missingPrerequisites(
  path: string,
  list: readonly Prerequisite[] = PREREQUISITES,
): Promise<Prerequisite[]> {
  const present = await Promise.all(list.map((p) => p.isPresent(path)));
  return list.filter((_, i) => !present[i]);
}

/** The command a root shell runs to install these packages. */
export function installCommand(packages: readonly string[]): string {
  return `apt-get update && apt-get install -y --no-install-recommends ${packages.join(" ")}`;
}

export interface PrepareOptions {
  /** PATH to look programs up on (the process's own by default). */
  readonly path?: string;
  /** Whether the process may install packages (root); by default, whether it runs as root. */
  readonly isRoot?: boolean;
  /** Report what is missing and what would be installed, and install nothing. */
  readonly checkOnly?: boolean;
  readonly log?: (line: string) => void;
}

export class PrerequisitesMissingError extends Error {
  constructor(
    readonly packages: readonly string[],
    message: string,
  ) {
    super(message);
    this.name = "PrerequisitesMissingError";
    // What to do is the whole message; a stack trace into vitest would only bury it.
    this.stack = `${this.name}: ${message}`;
  }
}

function aptGet(
  args: readonly string[],
  log: (line: string) => void,
  path: string,
  shown: readonly string[] = [],
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "apt-get",
      args,
      {
        env: { ...process.env, PATH: path, DEBIAN_FRONTEND: "noninteractive" },
        maxBuffer: 64 << 20,
        timeout: 15 * 60_000,
      },
      (error, _stdout, stderr) => {
        if (error === null) resolve();
        else reject(new Error(`apt-get ${args.join(" ")} failed: ${stderr.trim() || error.message}`));
      },
    );
    child.stdout?.on("data", (chunk: Buffer) => {
      // The packages asked for, not each of their dependencies.
      for (const line of chunk.toString().split("\n")) {
        const name = /^Setting up ([^ :]+)/.exec(line)?.[1];
        if (name !== undefined && shown.includes(name)) log(`  ${line}`);
      }
    });
  });
}

/**
 * Makes sure every prerequisite is there: installs the missing Debian packages when it may (root,
 * apt-get on PATH), and throws `PrerequisitesMissingError` with the command to run otherwise.
 * Then unpacks the tests' sshd, so that no test waits for the download.
 */
export async function preparePrerequisites(options: PrepareOptions = {}): Promise<void> {
  const path = options.path ?? process.env.PATH ?? "";
  const log = options.log ?? ((line: string) => console.log(line));
  const isRoot = options.isRoot ?? process.getuid?.() === 0;
  const missing = await missingPrerequisites(path);
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((p) => p.debianPackage))];
    log("The test suite needs programs this machine lacks:");
    for (const p of missing) log(`  ${p.debianPackage}: ${p.what}, because ${p.why}`);
    const canInstall = isRoot && (await onPath("apt-get", path));
    if (options.checkOnly === true || !canInstall) {
      const command = installCommand(packages);
      const reason =
        options.checkOnly === true
          ? "Would run, as root:"
          : isRoot
            ? "apt-get is not available here; on Debian or Ubuntu, run as root:"
            : "Installing them needs root; run as root (e.g. with sudo), then run the tests again:";
      log(`${reason}\n  ${command}`);
      throw new PrerequisitesMissingError(
        packages,
        `missing test prerequisites; install them with: ${command}`,
      );
    }
    log(`Installing ${packages.join(", ")} with apt-get.`);
    if (!(await aptListsPresent())) await aptGet(["update"], log, path);
    const install = () =>
      aptGet(["install", "-y", "--no-install-recommends", ...packages], log, path, packages);
    await install().catch(async () => {
      // Package lists that are present but stale name files the mirror no longer has.
      await aptGet(["update"], log, path);
      await install();
    });
    const still = await missingPrerequisites(path);
    if (still.length > 0) {
      throw new PrerequisitesMissingError(
        still.map((p) => p.debianPackage),
        `installed ${packages.join(", ")}, yet still missing: ${still.map((p) => p.what).join("; ")}`,
      );
    }
  }
  if (options.checkOnly !== true) {
    if (!(await sshdPresent(path))) {
      log(
        `openssh-server: sshd, because logins are judged by a real sshd; unpacking Debian's package into ${OPENSSH_CACHE_DIR} (not installed: that would start a system service)`,
      );
    }
    await findOrInstallSshd();
    await findOrInstallSftpServer();
  }
}

async function sshdPresent(path: string): Promise<boolean> {
  return (
    (process.env.WAP_SSHD ?? "") !== "" ||
    (await onPath("sshd", `${path}${delimiter}/usr/sbin${delimiter}/usr/local/sbin`)) ||
    (await isExecutable(join(OPENSSH_CACHE_DIR, "root", "usr", "sbin", "sshd")))
  );
}

async function aptListsPresent(): Promise<boolean> {
  const lists = await readdir("/var/lib/apt/lists").catch(() => [] as string[]);
  return lists.some((name) => name.endsWith("_Packages"));
}

/**
 * `wap ssh <target> -- true`, the real program as a user runs it, from its start to ssh's exit,
 * against a real server (embedded SQLite) and a real OpenSSH sshd on loopback set up as an agent
 * would set it up (host certificate, TrustedUserCAKeys, AuthorizedPrincipalsFile):
 *
 * - with a valid cached certificate, and with one to issue (the certificate file removed before
 *   each run: a new key is made and signed), p50 and p99 over 100 runs each;
 * - plain `ssh` with the same certificate and options: sshd's own work, and ssh's, the baseline;
 * - the CLI's own start-up (`wap --version`) next to `node -e 0`.
 *
 * BENCH_WAP_SSH_RUNS (default 100) sets the runs of each series; BENCH_WAP_SSH_PROFILE=<dir> also
 * writes a V8 CPU profile of one run of each (`--version`, cached, issued) under <dir>.
 *
 * The CLI runs built (one JavaScript file of the CLI and the workspace packages it uses, the npm
 * dependencies beside it), as when installed, signed in with a device key as `wap login` leaves it.
 * Run alone:
 *
 *   node --conditions=dev-source --import tsx bench/wap-ssh.ts
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AuthService,
  CertificateKeyType,
  CertificateService,
  DaemonService,
  DaemonStatus,
  PrincipalService,
  PrincipalType,
  SignSSHCertificateRequest_CertificateType,
  UserService,
} from "@wap/api";
import { sshPublicKeyLine } from "@wap/core/ssh-keys";
import { createServer, silentLogger } from "@wap/server";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { signUpWithWorkspace } from "@wap/test-kit/http";
import { openControlStream, SignedDaemon } from "@wap/test-kit/signed-daemon";
import { startSshd } from "@wap/test-kit/sshd";
import type { BenchComparison, BenchFigure, BenchSection, BenchTarget } from "./results.js";

const runs = Number(process.env.BENCH_WAP_SSH_RUNS ?? 100);
const packageDir = fileURLToPath(new URL("../packages/cli/", import.meta.url));

/**
 * Builds `wap` from the sources as `pnpm build` does (ES modules split at dynamic imports, npm
 * dependencies beside it), with the workspace packages it uses inlined. It sits one level below
 * package.json, as the published `dist/bin.js` does.
 */
const cliOutDir = join(packageDir, "dist");

/** Removes the build below, which must not ship with the package. */
async function removeCliBuild(): Promise<void> {
  for (const file of await readdir(cliOutDir).catch(() => [] as string[]))
    if (file.startsWith("wap-bench")) await rm(join(cliOutDir, file), { force: true });
}

async function buildCli(): Promise<string> {
  const { build } = await import("tsup");
  const outDir = cliOutDir;
  await removeCliBuild();
  await build({
    entry: { "wap-bench": join(packageDir, "src/bin.ts") },
    format: ["esm"],
    target: "node20",
    outDir,
    dts: false,
    sourcemap: false,
    splitting: true,
    clean: false,
    silent: true,
    config: false,
    tsconfig: join(packageDir, "tsconfig.json"),
    noExternal: [/^@wap\//, /^@bufbuild\//, /^@connectrpc\//],
    // The CLI's other npm dependencies stay beside it, as an install leaves them.
    external: ["commander", "open", "@peculiar/x509", "reflect-metadata"],
    esbuildOptions(options) {
      options.conditions = ["dev-source"];
      options.chunkNames = "wap-bench-[hash]";
    },
  });
  return join(outDir, "wap-bench.js");
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summarise(ms: readonly number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

interface Exit {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function finished(child: ChildProcess): Promise<Exit> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Runs a program to its exit; fails unless it exits 0. Returns the wall time in ms. */
async function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const exit = await finished(spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] }));
  const ms = performance.now() - started;
  if (exit.code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${exit.code}: ${exit.stderr}`);
  return ms;
}

/** The server, a workspace with an SSH authority, a target whose sshd trusts it, `wap` signed in. */
async function world(dir: string, wap: string) {
  const server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(dir, "server"),
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
    daemonKeepaliveSeconds: 3600,
  });
  const login = userInfo().username;
  const owner = await signUpWithWorkspace(server.url, "bench");
  const transport = transportFor("connect-binary-h2", server.url);
  const auth = bearer(owner.accessToken);
  const { workspaceId } = owner;
  const { certificateAuthority: ca } = await clientFor(
    CertificateService,
    transport,
  ).createCertificateAuthority({ workspaceId, name: "ssh-users", keyType: CertificateKeyType.ED25519 }, auth);
  const daemons = clientFor(DaemonService, transport);
  const { token } = await daemons.refreshEnrollToken({ workspaceId }, auth);
  const daemon = new SignedDaemon(server.url, "web-01");
  const { targetId } = await daemon.enroll(token);
  await daemons.updateDaemon({ workspaceId, id: daemon.id!, status: DaemonStatus.ACCEPTED }, auth);
  const principals = clientFor(PrincipalService, transport);
  await principals.setPrincipals({ workspaceId, targetId, usernames: [login] }, auth);
  const { principals: listed } = await principals.listPrincipals({ workspaceId, targetId, limit: 10 }, auth);
  const userId = (await clientFor(UserService, transport).whoami({}, auth)).user!.id;
  await principals.addSubjectsToPrincipal(
    { workspaceId, id: listed[0]!.id, subjectIds: [userId], type: PrincipalType.USER },
    auth,
  );
  const hostKey = generateKeyPairSync("ed25519");
  const host = await clientFor(CertificateService, daemon.transport).signSSHCertificate({
    workspaceId,
    type: SignSSHCertificateRequest_CertificateType.HOST,
    publicKey: sshPublicKeyLine(hostKey.publicKey),
  });
  const synced = await daemon.daemons.syncDaemon({ users: [login], privateIps: [], metadata: {} });
  const sshd = await startSshd({
    trustedUserCaKeys: host.caPublicKey.split("\n"),
    principalsForUser: Object.fromEntries(synced.principals.map((p) => [p.username, p.ids])),
    hostKeyPkcs8: hostKey.privateKey.export({ format: "der", type: "pkcs8" }),
    hostCertificate: host.signedCertificate,
  });
  await daemon.daemons.syncDaemon({
    users: [login],
    privateIps: [`${sshd.host}:${sshd.port}`],
    metadata: {},
  });
  const control = await openControlStream(daemon);

  // `wap login --no-browser`, approved with the codes it printed.
  const configDir = join(dir, "wap");
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    LANG: "C.UTF-8",
    WAP_CONFIG_DIR: configDir,
  };
  const child = spawn(process.execPath, [wap, "login", "--server", server.url, "--no-browser"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const done = finished(child);
  let printed = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer | string) => {
      printed += chunk.toString();
      if (printed.includes("Waiting for the sign-in")) resolve();
    });
    child.once("close", () => reject(new Error(`wap login ended early: ${printed}`)));
  });
  const url = new URL(/(https?:\/\/\S+\/cli-login\?\S+)/.exec(printed)![1]!);
  await clientFor(AuthService, transport).verifyCLILogin(
    {
      loginCode: url.searchParams.get("code")!,
      userCode: /Type this code on the page, then approve: (\S+)/.exec(printed)?.[1] ?? "",
    },
    auth,
  );
  const signedIn = await done;
  if (signedIn.code !== 0) throw new Error(`wap login failed: ${signedIn.stderr}`);

  return {
    env,
    login,
    sshd,
    targetId,
    certificate: join(configDir, "ssh", `${ca!.id}-cert.pub`),
    identity: join(configDir, "ssh", ca!.id),
    knownHosts: join(configDir, "ssh", `known_hosts-${workspaceId}`),
    async close() {
      control.cancel();
      await sshd.stop();
      await server.close();
    },
  };
}

/**
 * A `ssh` first on wap's PATH that notes when it starts and ends (bash's clock, no fork), around
 * the real ssh: what wap spends is the time before ssh starts and after it ends.
 */
async function markingSsh(dir: string, marks: string): Promise<string> {
  const bin = join(dir, "bin");
  await mkdir(bin);
  const real = (
    await finished(spawn("sh", ["-c", "command -v ssh"], { stdio: ["ignore", "pipe", "pipe"] }))
  ).stdout.trim();
  await writeFile(
    join(bin, "ssh"),
    // Then `times`: the CPU time of ssh (its children's line), to tell wap's CPU time from ssh's.
    `#!/bin/bash\necho "$EPOCHREALTIME" >> ${marks}\n${real} "$@"\nstatus=$?\necho "$EPOCHREALTIME" >> ${marks}\ntimes >> ${marks}\nexit $status\n`,
    { mode: 0o755 },
  );
  return bin;
}

/** Wall-clock now in ms, comparable with bash's $EPOCHREALTIME. */
const now = () => performance.timeOrigin + performance.now();

export async function runWapSshBench(): Promise<BenchSection> {
  const log = (line: string) => console.log(`  ${line}`);
  const dir = await mkdtemp(join(tmpdir(), "wap-ssh-bench-"));
  const wap = await buildCli();
  const w = await world(dir, wap);
  const figures: BenchFigure[] = [];
  const targets: BenchTarget[] = [];
  const comparisons: BenchComparison[] = [];
  const series_: BenchSection["series"][number][] = [];
  // The machine's load: the wall times below wait for a core when it is high.
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(", ");
  const loadAtStart = load();
  let loadAtEnd = loadAtStart;
  try {
    const node = process.execPath;
    const marks = join(dir, "ssh-marks");
    const wapEnv = { ...w.env, PATH: `${await markingSsh(dir, marks)}:${w.env.PATH}` };
    /**
     * One `wap ssh`: its whole time, wap's own (before ssh starts and after it ends), and wap's CPU
     * time (user and system, ssh's taken out), which the machine's load changes less.
     */
    const cpuFile = join(dir, "cpu");
    const wapSsh = async () => {
      await rm(marks, { force: true });
      const started = now();
      const exit = await finished(
        spawn("/usr/bin/time", ["-f", "%U %S", "-o", cpuFile, node, wap, "ssh", "web-01", "--", "true"], {
          env: wapEnv,
          stdio: ["ignore", "pipe", "pipe"],
        }),
      );
      const ended = now();
      if (exit.code !== 0) throw new Error(`wap ssh exited ${exit.code}: ${exit.stderr}`);
      const [sshStarted, sshEnded, , sshTimes] = (await readFile(marks, "utf8")).trim().split("\n");
      const seconds = (text: string) =>
        [...text.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);
      const total = (await readFile(cpuFile, "utf8")).trim().split("\n").at(-1)!.split(" ").map(Number);
      return {
        total: ended - started,
        own: Number(sshStarted) * 1000 - started + (ended - Number(sshEnded) * 1000),
        cpu: (total[0]! + total[1]! - seconds(sshTimes!)) * 1000,
      };
    };
    // The first run signs the certificate the cached runs use.
    await wapSsh();
    const plainSsh = () =>
      timed(
        "ssh",
        [
          ...["-o", `IdentityFile=${w.identity}`, "-o", `CertificateFile=${w.certificate}`],
          ...["-o", "IdentitiesOnly=yes", "-o", `UserKnownHostsFile=${w.knownHosts}`],
          ...["-o", "StrictHostKeyChecking=yes", "-o", `HostKeyAlias=${w.targetId}`, "-o", "BatchMode=yes"],
          ...["-p", String(w.sshd.port), "-l", w.login, w.sshd.host, "true"],
        ],
        w.env,
      );

    const profiles = process.env.BENCH_WAP_SSH_PROFILE;
    if (profiles) {
      // One run of each under the V8 profiler: <dir>/<kind>/*.cpuprofile (open in Chrome DevTools).
      const profiled = (kind: string, args: string[]) =>
        timed(node, ["--cpu-prof", `--cpu-prof-dir=${join(profiles, kind)}`, wap, ...args], w.env);
      await profiled("version", ["--version"]);
      await profiled("cached", ["ssh", "web-01", "--", "true"]);
      await rm(w.certificate, { force: true });
      await profiled("issued", ["ssh", "web-01", "--", "true"]);
    }

    // Rounds of one run of each, so that the machine's load weighs on every series alike.
    const labels = {
      node: "node -e 0",
      version: "wap --version (start-up)",
      ssh: "plain ssh, same certificate (sshd's and ssh's own time)",
      cached: "wap ssh, cached certificate",
      cachedOwn: "wap ssh, cached certificate: wap's own time",
      issued: "wap ssh, certificate issued",
      issuedOwn: "wap ssh, certificate issued: wap's own time",
      cachedCpu: "wap ssh, cached certificate: wap's CPU time",
      issuedCpu: "wap ssh, certificate issued: wap's CPU time",
    } as const;
    const ms = Object.fromEntries(Object.keys(labels).map((key) => [key, [] as number[]])) as Record<
      keyof typeof labels,
      number[]
    >;
    for (let round = 0; round < runs; round++) {
      ms.node.push(await timed(node, ["-e", "0"], w.env));
      ms.version.push(await timed(node, [wap, "--version"], w.env));
      ms.ssh.push(await plainSsh());
      const cached = await wapSsh();
      ms.cached.push(cached.total);
      ms.cachedOwn.push(cached.own);
      ms.cachedCpu.push(cached.cpu);
      await rm(w.certificate, { force: true });
      const issued = await wapSsh();
      ms.issued.push(issued.total);
      ms.issuedOwn.push(issued.own);
      ms.issuedCpu.push(issued.cpu);
    }
    const summary = {} as Record<keyof typeof labels, { p50: number; p99: number }>;
    for (const key of Object.keys(labels) as Array<keyof typeof labels>) {
      const { p50, p99 } = summarise(ms[key]);
      summary[key] = { p50, p99 };
      log(`${labels[key]}: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);
      figures.push(
        { label: `${labels[key]}, p50`, value: p50, unit: "ms" },
        { label: `${labels[key]}, p99`, value: p99, unit: "ms" },
      );
      series_.push({
        label: labels[key],
        xUnit: "run",
        yUnit: "ms",
        points: ms[key].map((v, i) => [i + 1, v] as const),
      });
    }
    const compare = (subject: keyof typeof labels, baseline: keyof typeof labels) =>
      comparisons.push({
        subject: { label: `${labels[subject]}, p50`, value: summary[subject].p50, unit: "ms" },
        baseline: { label: `${labels[baseline]}, p50`, value: summary[baseline].p50, unit: "ms" },
        ratio: summary[subject].p50 / summary[baseline].p50,
      });
    compare("version", "node");
    compare("cached", "ssh");
    compare("issued", "ssh");
    const target = (key: "cachedOwn" | "issuedOwn", limit: number) =>
      targets.push({
        figure: `${labels[key]}, p99`,
        comparison: "<=",
        value: limit,
        unit: "ms",
        met: summary[key].p99 <= limit,
      });
    target("cachedOwn", 300);
    target("issuedOwn", 500);
    loadAtEnd = load();
    log(`load average (1, 5, 15 min): ${loadAtStart} at the start, ${loadAtEnd} at the end`);
  } finally {
    await w.close();
    await rm(dir, { recursive: true, force: true });
    await removeCliBuild();
  }
  return {
    title: "wap ssh end to end",
    method: `\`wap ssh web-01 -- true\` (the built CLI, signed in with a device key) from its start to its exit against a local OpenSSH sshd, with a cached certificate and with one issued per run; wap's own time is what it spends before ssh starts and after ssh ends. Plain \`ssh\` with the same certificate and options is sshd's and ssh's own time; \`wap --version\` is the CLI's start-up next to \`node -e 0\`. ${runs} rounds, each running every one once.`,
    figures,
    comparisons,
    targets,
    series: series_,
    notes: [
      "wap's own time is marked by a bash wrapper around the real ssh (first on wap's PATH): bash's start-up, a few ms, counts as wap's.",
      "wap's CPU time is /usr/bin/time's user and system time of the run less ssh's (bash's `times` after ssh): on a loaded machine it moves less than the wall times.",
      `Load average (1, 5, 15 min): ${loadAtStart} at the start, ${loadAtEnd} at the end.`,
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { sectionText } = await import("./report.js");
  console.log(sectionText(await runWapSshBench()));
  process.exit(0);
}

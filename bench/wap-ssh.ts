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
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
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
async function buildCli(): Promise<string> {
  const { build } = await import("tsup");
  const outDir = join(packageDir, "dist");
  for (const file of await readdir(outDir).catch(() => [] as string[]))
    if (file.startsWith("wap-bench")) await rm(join(outDir, file), { force: true });
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

async function series(count: number, before: () => Promise<void>, run: () => Promise<number>) {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    await before();
    ms.push(await run());
  }
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
    { loginCode: url.searchParams.get("code")!, userCode: /shows this code: (\S+)/.exec(printed)?.[1] ?? "" },
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

export async function runWapSshBench(): Promise<BenchSection> {
  const log = (line: string) => console.log(`  ${line}`);
  const dir = await mkdtemp(join(tmpdir(), "wap-ssh-bench-"));
  const wap = await buildCli();
  const w = await world(dir, wap);
  const figures: BenchFigure[] = [];
  const targets: BenchTarget[] = [];
  const comparisons: BenchComparison[] = [];
  const series_: BenchSection["series"][number][] = [];
  try {
    const node = process.execPath;
    const nothing = async () => {};
    const wapSsh = () => timed(node, [wap, "ssh", "web-01", "--", "true"], w.env);
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

    if (process.env.HOLD) {
      console.log("HOLD", JSON.stringify({ env: w.env, wap, cert: w.certificate }));
      await new Promise((r) => setTimeout(r, Number(process.env.HOLD)));
    }
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

    const measured: Array<[string, number[]]> = [];
    const measure = async (label: string, before: () => Promise<void>, run: () => Promise<number>) => {
      const ms = await series(runs, before, run);
      const { p50, p99 } = summarise(ms);
      log(`${label}: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);
      figures.push(
        { label: `${label}, p50`, value: p50, unit: "ms" },
        { label: `${label}, p99`, value: p99, unit: "ms" },
      );
      measured.push([label, ms]);
      return { p50, p99 };
    };

    const nodeStart = await measure("node -e 0", nothing, () => timed(node, ["-e", "0"], w.env));
    const cliStart = await measure("wap --version (start-up)", nothing, () =>
      timed(node, [wap, "--version"], w.env),
    );
    const ssh = await measure("plain ssh, same certificate", nothing, plainSsh);
    const cached = await measure("wap ssh, cached certificate", nothing, wapSsh);
    const issuing = await measure(
      "wap ssh, certificate issued",
      () => rm(w.certificate, { force: true }),
      wapSsh,
    );
    const compare = (subject: string, of: { p50: number }, baseline: string, to: { p50: number }) =>
      comparisons.push({
        subject: { label: `${subject}, p50`, value: of.p50, unit: "ms" },
        baseline: { label: `${baseline}, p50`, value: to.p50, unit: "ms" },
        ratio: of.p50 / to.p50,
      });
    compare("wap --version (start-up)", cliStart, "node -e 0", nodeStart);
    compare("wap ssh, cached certificate", cached, "plain ssh, same certificate", ssh);
    compare("wap ssh, certificate issued", issuing, "plain ssh, same certificate", ssh);
    const own = (label: string, of: { p99: number }, limit: number) => {
      const value = of.p99 - ssh.p99;
      figures.push({ label, value, unit: "ms" });
      targets.push({ figure: label, comparison: "<=", value: limit, unit: "ms", met: value <= limit });
    };
    own("wap ssh p99 beyond plain ssh's, cached certificate", cached, 300);
    own("wap ssh p99 beyond plain ssh's, certificate issued", issuing, 500);
    for (const [label, ms] of measured)
      series_.push({ label, xUnit: "run", yUnit: "ms", points: ms.map((v, i) => [i + 1, v] as const) });
  } finally {
    await w.close();
    await rm(dir, { recursive: true, force: true });
  }
  return {
    title: "wap ssh end to end",
    method: `\`wap ssh web-01 -- true\` (the built CLI, signed in with a device key) from its start to ssh's exit against a local OpenSSH sshd, ${runs} runs each with a cached certificate and with one issued per run; plain \`ssh\` with the same certificate and options as sshd's (and ssh's) own time; \`wap --version\` as the CLI's start-up next to \`node -e 0\`.`,
    figures,
    comparisons,
    targets,
    series: series_,
    notes: [
      "The targets hold wap's own time: the p99 of `wap ssh` less the p99 of plain `ssh` with the same certificate (sshd's and ssh's own work).",
    ],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { sectionText } = await import("./report.js");
  console.log(sectionText(await runWapSshBench()));
  process.exit(0);
}

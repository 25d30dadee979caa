/**
 * SSH certificate issuance as a deployment runs it, side by side with smallstep step-ca:
 *
 * - ours: `wap-server` started as `pnpm start` starts it (its own process, `node --import tsx
 *   packages/server/src/bin.ts`), TLS 1.3 with HTTP/2 (WAP_TLS_CERT/WAP_TLS_KEY), the default
 *   `info` log level with one line per request written to a file, the embedded SQLite (WAL,
 *   synchronous=FULL), rate limits off; SignSSHCertificate in Connect JSON for an Ed25519 user key
 *   with an Ed25519 CA, 1 h;
 * - the peer (step-ca.ts): step-ca with its badger database and a JWK provisioner, `POST
 *   /1.0/ssh/sign` with a one-time token per request (minted before the run), the same key types
 *   and validity, its default logging (one line per request) to a file.
 *
 * Both are driven by the same Node load generator (http2-load.ts in a child process: one HTTP/2
 * connection over TLS, `concurrency` requests in flight, closed loop). Each server's CPU comes
 * from /proc: every thread of its process, and for ours the main thread (the event loop) alone.
 * A second, profiled run of ours (`--cpu-prof`) splits the event loop's time per certificate by
 * part (call-budget.ts).
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http2 from "node:http2";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CertificateKeyType } from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { createServer, silentLogger } from "@wap/server";
import { callBudget, type Profile, profileWindow } from "./call-budget.js";
import { type LoadResult, type RequestSpec, runLoadInChild } from "./http2-load.js";
import { cpuUs } from "./process-cpu.js";
import type { BenchFigure, BenchSection } from "./results.js";
import { ed25519PublicKeyLine } from "./ssh-key.js";
import { type StepCa, startStepCa, stepCaUnavailable } from "./step-ca.js";
import { signUpWorkspaceOwner } from "./workspace-owner.js";

const repository = join(dirname(fileURLToPath(import.meta.url)), "..");

/** What issuance as deployed must reach. */
export const issuanceTargets = {
  /** Event loop µs per certificate, TLS and info request logs on. */
  eventLoopUs: 250,
  /** Certificates/s as a multiple of step-ca's in the same run. */
  peerRatio: 1.5,
};

export interface IssuanceOptions {
  readonly seconds: number;
  readonly concurrency: number;
  /** Measure step-ca too (default true; skipped with a note when it cannot be built). */
  readonly peer?: boolean;
  /** Profile a second run of ours for the call budget (default true). */
  readonly profile?: boolean;
  /**
   * Another checkout of the repository (e.g. the commit before a change, with node_modules) whose
   * server is measured first the same way, as "before", for a change's effect in one run.
   */
  readonly baselineRoot?: string;
}

interface ServerRun extends LoadResult {
  readonly cpuUsPerCertificate: number;
  /** The main thread's CPU per certificate; undefined for the peer. */
  readonly eventLoopUsPerCertificate?: number;
  readonly coresBusy: number;
}

export async function runIssuanceBench(options: IssuanceOptions): Promise<BenchSection> {
  const dir = await mkdtemp(join(tmpdir(), "wap-issuance-"));
  try {
    const tls = selfSignedCertificate(dir);
    const ours = await prepareOurs(dir, tls);
    const load = { seconds: options.seconds, concurrency: options.concurrency };
    const beforeRun =
      options.baselineRoot === undefined
        ? undefined
        : await withOurServer(
            ours,
            [],
            (pid, url) => measure(pid, url, ours.spec, load, true),
            options.baselineRoot,
          );
    const oursRun = await withOurServer(ours, [], (pid, url) => measure(pid, url, ours.spec, load, true));
    const budget =
      options.profile === false
        ? undefined
        : callBudget(await profileOurs(ours, dir, load), oursRun.eventLoopUsPerCertificate ?? 0);

    let peerRun: ServerRun | undefined;
    let peerNote: string | undefined;
    if (options.peer !== false) {
      const why = stepCaUnavailable();
      if (why !== undefined) peerNote = why;
      else {
        let peer: StepCa | undefined;
        try {
          peer = await startStepCa(join(dir, "step-ca"), {
            // More than step-ca signs in the time on two cores (about 2,000 a second).
            tokens: 6_000 * (options.seconds + 1),
          });
          peerRun = await measure(peer.pid, peer.url, peer.spec, load, false);
        } finally {
          await peer?.stop();
        }
      }
    }
    return section(load, oursRun, budget, peerRun, peerNote, ours.logFile, beforeRun);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// --- ours ----------------------------------------------------------------------------------------

interface Ours {
  readonly dataDir: string;
  readonly tls: { cert: string; key: string };
  readonly spec: RequestSpec;
  readonly logFile: string;
}

/** A data dir with a signed-up owner and an Ed25519 CA, made by an in-process server, then closed. */
async function prepareOurs(dir: string, tls: { cert: string; key: string }): Promise<Ours> {
  const dataDir = join(dir, "wap-data");
  const setup = await createServer({ port: 0, dataDir, logger: silentLogger });
  try {
    const client = createPlatformClient({ baseUrl: setup.url });
    const { accessToken, workspaceId } = await signUpWorkspaceOwner(client, "Bench Mark", "bench");
    const { certificateAuthority } = await client.certificates.createCertificateAuthority({
      workspaceId,
      name: "bench-ca",
      keyType: CertificateKeyType.ED25519,
    });
    const spec: RequestSpec = {
      method: "POST",
      path: "/platform.v1.CertificateService/SignSSHCertificate",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        authorization: `Bearer ${accessToken}`,
      },
      body: JSON.stringify({
        workspaceId,
        caId: certificateAuthority!.id,
        type: "CERTIFICATE_TYPE_USER",
        publicKey: ed25519PublicKeyLine("bench@platform"),
        ttl: "3600s",
      }),
      ca: readFileSync(tls.cert, "utf8"),
    };
    return { dataDir, tls, spec, logFile: join(dir, "wap-server.log") };
  } finally {
    await setup.close();
  }
}

/** Runs `wap-server` as `pnpm start` does, serving TLS on a free port, while `run` runs. */
async function withOurServer<T>(
  ours: Ours,
  nodeOptions: readonly string[],
  run: (pid: number, url: string) => Promise<T>,
  root = repository,
): Promise<T> {
  const port = await freePort();
  const log = openSync(ours.logFile, "a");
  const child = spawn(
    process.execPath,
    [...nodeOptions, "--conditions=dev-source", "--import", "tsx", "packages/server/src/bin.ts"],
    {
      cwd: root,
      stdio: ["ignore", "ignore", log],
      env: {
        ...process.env,
        WAP_HOST: "127.0.0.1",
        WAP_PORT: String(port),
        WAP_DATA_DIR: ours.dataDir,
        WAP_TLS_CERT: ours.tls.cert,
        WAP_TLS_KEY: ours.tls.key,
        WAP_RATE_LIMIT: "0",
        WAP_RATE_LIMIT_ANONYMOUS: "0",
        // The console's assets are not on the request path; `pnpm start` builds them first.
        WAP_CONSOLE: "false",
        WAP_LOG_LEVEL: "info",
      },
    },
  );
  const url = `https://localhost:${port}`;
  try {
    await waitReady(url, ours.spec.ca!, child);
    return await run(child.pid!, url);
  } finally {
    await stopChild(child);
  }
}

/** The profile of ours under the same load, written by `--cpu-prof` at its graceful exit. */
async function profileOurs(
  ours: Ours,
  dir: string,
  load: { seconds: number; concurrency: number },
): Promise<Profile> {
  const profileDir = join(dir, "profile");
  const window = { from: 0, to: 0 };
  await withOurServer(
    ours,
    ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--cpu-prof-interval=200"],
    async (_pid, url) => {
      await runLoadInChild(url, ours.spec, { ...load, seconds: 1 });
      window.from = monotonicUs();
      await runLoadInChild(url, ours.spec, load);
      window.to = monotonicUs();
    },
  );
  const file = readdirSync(profileDir).find((name) => name.endsWith(".cpuprofile"));
  if (file === undefined) throw new Error("the profiled server wrote no profile");
  const profile = JSON.parse(readFileSync(join(profileDir, file), "utf8")) as Profile;
  const measured = profileWindow(profile, window.from, window.to);
  // Kept for a closer look (Chrome DevTools, speedscope) when BENCH_PROFILE_OUT names a file.
  if (process.env.BENCH_PROFILE_OUT) writeFileSync(process.env.BENCH_PROFILE_OUT, JSON.stringify(measured));
  return measured;
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

// --- measuring -----------------------------------------------------------------------------------

/** One warm-up second, then the run, with the server's CPU from /proc around it. */
async function measure(
  pid: number,
  url: string,
  spec: RequestSpec,
  load: { seconds: number; concurrency: number },
  eventLoop: boolean,
): Promise<ServerRun> {
  // One-time tokens are used once: the warm-up takes its share of them, the run the rest.
  const split = spec.bodies && Math.floor(spec.bodies.length / (load.seconds + 1));
  const warmUp = split === undefined ? spec : { ...spec, bodies: spec.bodies!.slice(0, split) };
  const measured = split === undefined ? spec : { ...spec, bodies: spec.bodies!.slice(split) };
  await runLoadInChild(url, warmUp, { ...load, seconds: 1 });
  const before = { all: cpuUs(pid), main: cpuUs(pid, pid), at: performance.now() };
  const result = await runLoadInChild(url, measured, load);
  const wall = (performance.now() - before.at) * 1000;
  const all = cpuUs(pid) - before.all;
  const certificates = Math.max(1, result.requests);
  return {
    ...result,
    cpuUsPerCertificate: all / certificates,
    ...(eventLoop && { eventLoopUsPerCertificate: (cpuUs(pid, pid) - before.main) / certificates }),
    coresBusy: all / wall,
  };
}

// --- processes -----------------------------------------------------------------------------------

/**
 * A self-signed P-256 certificate and its key (openssl), as files `<name>.crt` and `<name>.key` in
 * `dir`: for localhost, or with `ca`, a CA certificate named `subject`.
 */
export function selfSignedCertificate(
  dir: string,
  options: { name?: string; ca?: boolean; subject?: string } = {},
): { cert: string; key: string } {
  const cert = join(dir, `${options.name ?? "tls"}.crt`);
  const key = join(dir, `${options.name ?? "tls"}.key`);
  const extensions = options.ca
    ? ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]
    : ["subjectAltName=DNS:localhost,IP:127.0.0.1"];
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"],
      ...["-subj", `/CN=${options.subject ?? "localhost"}`],
      ...extensions.flatMap((extension) => ["-addext", extension]),
      ...["-keyout", key, "-out", cert],
    ],
    { stdio: "ignore" },
  );
  return { cert, key };
}

export async function freePort(): Promise<number> {
  const server = createNetServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

/** Resolves once `url` answers an HTTP/2 request over TLS; rejects when `child` exits first. */
export async function waitReady(url: string, ca: string, child: ChildProcess, path = "/healthz") {
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`${url}: the server exited with ${code}`))),
  );
  exited.catch(() => {});
  for (let attempt = 0; attempt < 600; attempt++) {
    const answered = await Promise.race([
      new Promise<boolean>((resolve) => {
        const session = http2.connect(url, { ca });
        session.on("error", () => resolve(false));
        const request = session.request({ ":path": path });
        request.on("response", () => {
          session.close();
          resolve(true);
        });
        request.on("error", () => resolve(false));
        request.end();
      }),
      exited,
    ]);
    if (answered) return;
    await Promise.race([new Promise((resolve) => setTimeout(resolve, 100)), exited]);
  }
  throw new Error(`${url} did not answer within a minute`);
}

/** SIGTERM, then waits for the exit (a graceful shutdown flushes logs and profiles). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

// --- the section ---------------------------------------------------------------------------------

const round = (value: number, digits = 0) => Number(value.toFixed(digits));

function figures(name: string, run: ServerRun): BenchFigure[] {
  return [
    { label: `${name}: throughput`, value: round(run.perSecond), unit: "certificates/s" },
    { label: `${name}: latency p99`, value: round(run.p99Ms, 2), unit: "ms" },
    {
      label: `${name}: server CPU per certificate (all threads)`,
      value: round(run.cpuUsPerCertificate),
      unit: "µs",
    },
    ...(run.eventLoopUsPerCertificate === undefined
      ? []
      : [
          {
            label: `${name}: event loop per certificate`,
            value: round(run.eventLoopUsPerCertificate),
            unit: "µs",
          },
        ]),
    { label: `${name}: cores busy`, value: round(run.coresBusy, 2), unit: "cores" },
    { label: `${name}: latency p50`, value: round(run.p50Ms, 2), unit: "ms" },
    { label: `${name}: load generator CPU per request`, value: round(run.clientCpuUsPerRequest), unit: "µs" },
    { label: `${name}: certificates`, value: run.requests, unit: "certificates" },
    { label: `${name}: failed requests`, value: run.errors, unit: "requests" },
  ];
}

function section(
  load: { seconds: number; concurrency: number },
  ours: ServerRun,
  budget: ReturnType<typeof callBudget> | undefined,
  peer: ServerRun | undefined,
  peerNote: string | undefined,
  logFile: string,
  before?: ServerRun,
): BenchSection {
  const oursName = "wap-server SignSSHCertificate";
  const peerName = "step-ca /1.0/ssh/sign";
  const oursFigures = [
    ...figures(oursName, ours),
    ...(budget ?? []).map(({ part, microseconds }) => ({
      label: `${oursName}: event loop per certificate, ${part}`,
      value: round(microseconds),
      unit: "µs",
    })),
  ];
  const peerFigures = peer ? figures(peerName, peer) : [];
  const beforeName = "wap-server SignSSHCertificate, baseline checkout (before)";
  const beforeFigures = before ? figures(beforeName, before) : [];
  const eventLoop = oursFigures.find((f) => f.label.endsWith("event loop per certificate"))!;
  const ratio = peer && peer.perSecond > 0 ? round(ours.perSecond / peer.perSecond, 3) : undefined;
  for (const run of [ours, peer, before]) {
    if (run && run.errors > 0) process.exitCode = 1;
  }
  const sectionFor: BenchSection = {
    title: "SSH certificate issuance as deployed, against step-ca",
    method: `One HTTP/2 connection over ${ours.tls ?? "TLS"} from the Node load generator in a child process, ${load.concurrency} requests in flight (closed loop), ${load.seconds} s after a 1 s warm-up. Ours: wap-server started as \`pnpm start\` starts it, info-level request logs to a file, embedded SQLite (WAL, synchronous=FULL), rate limits off, SignSSHCertificate (Connect JSON) for an Ed25519 user key with an Ed25519 CA, 1 h. Peer: step-ca 0.19 built from Debian's sources, badger database, a JWK provisioner, /1.0/ssh/sign with a one-time token per request, same keys and validity, its default request logs to a file.`,
    figures: [
      ...oursFigures,
      ...beforeFigures,
      ...peerFigures,
      ...(ratio === undefined
        ? []
        : [{ label: "wap-server throughput / step-ca throughput", value: ratio, unit: "×" }]),
    ],
    comparisons: [
      ...(before ? pairUp(oursFigures, beforeFigures, [0, 1, 2, 3, 4]) : []),
      ...(peer ? pairUp(oursFigures, peerFigures, [0, 1, 2]) : []),
    ],
    targets: [
      {
        figure: eventLoop.label,
        comparison: "<=",
        value: issuanceTargets.eventLoopUs,
        unit: "µs",
        met: eventLoop.value <= issuanceTargets.eventLoopUs,
      },
      ...(ratio === undefined
        ? []
        : [
            {
              figure: "wap-server throughput / step-ca throughput",
              comparison: ">=" as const,
              value: issuanceTargets.peerRatio,
              unit: "×",
              met: ratio >= issuanceTargets.peerRatio,
            },
          ]),
    ],
    series: [
      ...(before
        ? [{ label: beforeName, xUnit: "s", yUnit: "certificates/s", points: before.throughput }]
        : []),
      { label: oursName, xUnit: "s", yUnit: "certificates/s", points: ours.throughput },
      { label: oursName, xUnit: "percentile", yUnit: "ms", points: ours.latencyCurve },
      ...(peer
        ? [
            { label: peerName, xUnit: "s", yUnit: "certificates/s", points: peer.throughput },
            { label: peerName, xUnit: "percentile", yUnit: "ms", points: peer.latencyCurve },
          ]
        : []),
    ],
    notes: [
      "Server CPU counts every thread of the server's process; cores busy is that CPU over the run's wall time; the event loop figure is the main thread alone.",
      `Request log lines of ours in the run's log file: ${countLines(logFile)}.`,
      ...(peerNote ? [`step-ca not measured: ${peerNote}`] : []),
      ...(ours.errors + (peer?.errors ?? 0) > 0 ? ["Some requests failed: the figures are not valid."] : []),
    ],
  };
  return sectionFor;
}

/** Subject against baseline for the figures at `indexes` of both lists. */
function pairUp(subject: BenchFigure[], baseline: BenchFigure[], indexes: readonly number[]) {
  return indexes.map((i) => ({
    subject: subject[i]!,
    baseline: baseline[i]!,
    ratio: baseline[i]!.value > 0 ? round(subject[i]!.value / baseline[i]!.value, 3) : 0,
  }));
}

function countLines(file: string): number {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.includes('"msg":"request"')).length;
  } catch {
    return 0;
  }
}

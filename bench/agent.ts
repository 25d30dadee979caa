/**
 * The host agent (`wap-agent run`, the real program) against a real server on embedded SQLite:
 *
 * - its resident memory idle (enrolled, accepted, synced, control stream open) and with 50 web
 *   terminals open (each a login shell in a pty, a browser WebSocket attached and answered);
 * - the time from a grant change (AddSubjectsToPrincipal / RemoveSubjectsFromPrincipal, measured
 *   from the call) to the principals file on disk, over 100 changes: p50 and p99; then again with
 *   two server instances over PostgreSQL (WAP_TEST_DATABASE_URL, else embedded PostgreSQL), the
 *   agent on one and the grants through the other (BENCH_AGENT_POSTGRES=0 skips it).
 *
 * The agent runs as it does when installed: built into JavaScript first (one bundle of the agent
 * and the workspace packages it uses, the npm dependencies beside it), not through the
 * TypeScript loader, which alone adds about 30 MiB. Run alone:
 *
 *   node --conditions=dev-source --import tsx bench/agent.ts
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CertificateKeyType, DaemonStatus, PrincipalType } from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { createServer, silentLogger } from "@wap/server";
import { startTestPostgres } from "@wap/storage-postgres/testing";
import { runAgent, wapAgent } from "@wap/test-kit/agent-process";
import { openTerminal, type TerminalSocket, terminalUrl } from "@wap/test-kit/terminal";
import type { BenchFigure, BenchSection, BenchTarget } from "./results.js";
import { signUpWorkspaceOwner } from "./workspace-owner.js";

const sessions = 50;
const packageDir = fileURLToPath(new URL("../packages/agent/", import.meta.url));

/** Builds `wap-agent.js` from the sources, as `pnpm build` would, into one file; returns its path. */
async function buildAgent(): Promise<string> {
  const { build } = await import("tsup");
  const outDir = join(packageDir, "node_modules/.cache/wap-agent-bench");
  await build({
    entry: { "wap-agent": join(packageDir, "src/bin.ts") },
    format: ["esm"],
    target: "node20",
    outDir,
    dts: false,
    sourcemap: false,
    splitting: false,
    clean: true,
    silent: true,
    config: false,
    tsconfig: join(packageDir, "tsconfig.json"),
    noExternal: [/^@wap\//, /^@bufbuild\//, /^@connectrpc\//],
    external: ["@lydell/node-pty", "commander"],
    esbuildOptions(options) {
      options.conditions = ["dev-source"];
    },
  });
  return join(outDir, "wap-agent.js");
}
const changes = 100;

function rssMiB(pid: number): number {
  const status = execFileSync("cat", [`/proc/${pid}/status`], { encoding: "utf8" });
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  return kib / 1024;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An enrolled, accepted agent (the built program) whose machine's account can be granted. */
async function agentWorld(dir: string, agentUrl: string, adminUrl: string, bundle: string) {
  await mkdir(dir, { recursive: true });
  const client = createPlatformClient({ baseUrl: adminUrl });
  const { workspaceId, accessToken } = await signUpWorkspaceOwner(client, "Agent Owner", "agent-owner");
  const userId = (await client.users.whoami({})).user!.id;
  await client.certificates.createCertificateAuthority({
    workspaceId,
    name: "ssh",
    keyType: CertificateKeyType.ED25519,
  });
  const { token } = await client.daemons.refreshEnrollToken({ workspaceId });
  const stateDir = join(dir, "state");
  const sshdDir = join(dir, "sshd");
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "host_key")]);
  const enrolled = await wapAgent(["enroll", "--server", agentUrl, "--state-dir", stateDir], {
    WAP_ENROLL_TOKEN: token,
  });
  if (enrolled.code !== 0) throw new Error(`enrolment failed: ${enrolled.stderr}`);
  const { daemonId, targetId } = JSON.parse(await readFile(join(stateDir, "enrolment.json"), "utf8"));
  const agent = runAgent(
    [
      "--state-dir",
      stateDir,
      "--sshd-dir",
      sshdDir,
      "--ssh-address",
      "127.0.0.1:22",
      "--host-key",
      join(dir, "host_key.pub"),
      "--sessions-socket",
      join(dir, "sessions.sock"),
    ],
    [bundle],
  );
  const username = userInfo().username;
  await agent.waitFor((l) => l.msg === "control stream open", 0);
  await client.daemons.updateDaemon({ workspaceId, id: daemonId, status: DaemonStatus.ACCEPTED });
  await agent.waitFor((l) => l.msg === "host certificate signed", 0);
  await client.principals.setPrincipals({ workspaceId, targetId, usernames: [username] });
  const { principals } = await client.principals.listPrincipals({
    workspaceId,
    targetId,
    limit: 10,
    offset: 0,
  });
  const grant = { workspaceId, id: principals[0]!.id, subjectIds: [userId], type: PrincipalType.USER };
  const principalsFile = join(sshdDir, "principals", username);
  const onDisk = async (present: boolean) => {
    for (;;) {
      const text = await readFile(principalsFile, "utf8").catch(() => "");
      if (text.includes(userId) === present) return;
      await pause(2);
    }
  };
  return {
    client,
    accessToken,
    workspaceId,
    daemonId,
    username,
    agent,
    /** `changes` grant changes (added, removed, added…), each timed from the call to the file on disk; ends granted. */
    async grantLatencies(): Promise<number[]> {
      const latencies: number[] = [];
      for (let i = 0; i < changes; i++) {
        const add = i % 2 === 0;
        const started = performance.now();
        if (add) await client.principals.addSubjectsToPrincipal(grant);
        else await client.principals.removeSubjectsFromPrincipal(grant);
        await onDisk(add);
        latencies.push(performance.now() - started);
      }
      if (changes % 2 === 0) {
        await client.principals.addSubjectsToPrincipal(grant);
        await onDisk(true);
      }
      return latencies;
    },
  };
}

function summarise(latencies: readonly number[]) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

export async function runAgentBench(): Promise<BenchSection> {
  const log = (text: string) => console.error(`[agent] ${text}`);
  const dir = await mkdtemp(join(tmpdir(), "wap-bench-agent-"));
  const bundle = await buildAgent();
  const server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(dir, "server"),
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
  });
  const sockets: TerminalSocket[] = [];
  let world: Awaited<ReturnType<typeof agentWorld>> | undefined;
  const figures: BenchFigure[] = [];
  const targets: BenchTarget[] = [];
  const series: BenchSection["series"][number][] = [];
  const notes = [
    "The agent runs built (one JavaScript bundle), as when installed; from the TypeScript sources its RSS is about 30 MiB more (the loader).",
  ];
  try {
    world = await agentWorld(join(dir, "one"), server.url, server.url, bundle);
    const { client, agent, workspaceId, daemonId, username } = world;
    const pid = agent.child.pid!;

    // Idle: let the start settle, then sample.
    await pause(5_000);
    const idleMiB = rssMiB(pid);
    log(`idle RSS ${idleMiB.toFixed(1)} MiB`);

    const latencies = await world.grantLatencies();
    const { p50, p99 } = summarise(latencies);
    log(`grant change to disk: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);

    // 50 terminals, each answered by its shell.
    for (let i = 0; i < sessions; i++) {
      const { session } = await client.daemons.createSession({ workspaceId, daemonId, username });
      const socket = await openTerminal(terminalUrl(server.url, workspaceId, session!.sessionId), {
        token: world.accessToken,
      });
      socket.send(`echo ready-${i}-$((1+1))\n`);
      let text = "";
      try {
        while (!text.includes(`ready-${i}-2`)) {
          const frame = await socket.nextFrame();
          if (frame.binary) text += frame.data.toString("utf8");
        }
      } catch (error) {
        const warnings = agent.lines.filter((l) => l.level !== "info");
        throw new Error(
          `terminal ${i + 1} of ${sessions} failed: ${error}; agent: ${JSON.stringify(warnings.slice(-5))}`,
        );
      }
      sockets.push(socket);
    }
    await pause(2_000);
    const busyMiB = rssMiB(pid);
    log(`RSS with ${sessions} terminals ${busyMiB.toFixed(1)} MiB`);

    figures.push(
      { label: "agent RSS, idle", value: idleMiB, unit: "MiB" },
      { label: `agent RSS, ${sessions} terminals open`, value: busyMiB, unit: "MiB" },
      { label: "grant change to principals file, p50", value: p50, unit: "ms" },
      { label: "grant change to principals file, p99", value: p99, unit: "ms" },
    );
    targets.push(
      { figure: "agent RSS, idle", comparison: "<=", value: 80, unit: "MiB", met: idleMiB <= 80 },
      {
        figure: "grant change to principals file, p99",
        comparison: "<=",
        value: 1000,
        unit: "ms",
        met: p99 <= 1000,
      },
    );
    series.push({
      label: "grant change to disk (one instance)",
      xUnit: "change",
      yUnit: "ms",
      points: latencies.map((ms, i) => [i + 1, ms] as const),
    });
  } finally {
    for (const socket of sockets) socket.close();
    await world?.agent.stop();
    await server.close();
  }

  // Two instances over PostgreSQL: the agent on one, the grants made through the other.
  if (process.env.BENCH_AGENT_POSTGRES !== "0") {
    const pg = await startTestPostgres();
    const masterKey = formatMasterKey(generateMasterKey());
    const databaseUrl = await pg.freshSchema();
    const instance = (name: string) =>
      createServer({
        host: "127.0.0.1",
        port: 0,
        dataDir: join(dir, name),
        databaseUrl,
        masterKey,
        logger: silentLogger,
        rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
      });
    const a = await instance("a");
    const b = await instance("b");
    let two: Awaited<ReturnType<typeof agentWorld>> | undefined;
    try {
      two = await agentWorld(join(dir, "two"), a.url, b.url, bundle);
      const latencies = await two.grantLatencies();
      const { p50, p99 } = summarise(latencies);
      log(`two instances over PostgreSQL (${pg.source}): p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);
      figures.push(
        { label: "grant change to principals file, two instances, p50", value: p50, unit: "ms" },
        { label: "grant change to principals file, two instances, p99", value: p99, unit: "ms" },
      );
      targets.push({
        figure: "grant change to principals file, two instances, p99",
        comparison: "<=",
        value: 1000,
        unit: "ms",
        met: p99 <= 1000,
      });
      series.push({
        label: "grant change to disk (two instances)",
        xUnit: "change",
        yUnit: "ms",
        points: latencies.map((ms, i) => [i + 1, ms] as const),
      });
      notes.push(
        `Two instances: PostgreSQL (${pg.source}); the grant goes through one, the agent is connected to the other.`,
      );
    } finally {
      await two?.agent.stop();
      await a.close();
      await b.close();
      await pg.stop();
    }
  }
  await rm(dir, { recursive: true, force: true });
  return {
    title: "Host agent (wap-agent)",
    method:
      `The real \`wap-agent run\` process against one server on embedded SQLite: RSS (VmRSS) idle and with ${sessions} ` +
      `browser terminals open (the shells not counted), and the time from a grant change RPC to the principals file on disk over ${changes} changes; ` +
      "then the same changes made through a second instance over PostgreSQL.",
    figures,
    comparisons: [],
    targets,
    series,
    notes,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const section = await runAgentBench();
  console.log(JSON.stringify(section.figures, null, 2));
  process.exit(0);
}

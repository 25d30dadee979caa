/**
 * Daemon control streams at scale: N agent daemons (BENCH_DAEMON_STREAMS, default 10,000), each
 * on its own HTTP/2 connection as the agent runs, holding DaemonControlService.Connect open on
 * one server process.
 *
 * Processes: the server alone in a child (its memory is its own: embedded SQLite in a temporary
 * directory, or BENCH_DATABASE_URL, a PostgreSQL database of its own; request log off, rate
 * limits off, keepalive HeartbeatAcks off so that every ack is an answer), and BENCH_DAEMON_LOADERS load children (default 2) that own the daemons' keys and
 * connections. A second server child, run first, holds N bare HTTP/2 connections: the baseline
 * that separates the cost of a connection from that of the stream on it.
 *
 * Measured:
 * - server RSS and V8 heap (after a full GC) with the daemons enrolled and no stream open, then
 *   with N streams open: memory per stream (connection included);
 * - heartbeat round trips: every stream sends one Heartbeat and times its HeartbeatAck, paced at
 *   BENCH_HEARTBEAT_RATE per second in total (default 1000; the agents of N = 10,000 send 33/s),
 *   next to HTTP/2 PINGs on the same connections at the same pace (transport only); then a burst,
 *   every stream at once;
 * - a reconnect storm: every connection drops at once and reconnects at once (at most 256 opens
 *   in flight per load child, so the listen backlog does not turn it into SYN retries): seconds
 *   until every daemon is online again, each stream having answered a heartbeat (it is online
 *   once it does) and ListDaemons counting N online.
 *
 *   node --conditions=dev-source --import tsx bench/daemon-streams.ts
 *
 * @module
 */
import { type ChildProcess, fork } from "node:child_process";
import { generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http2 from "node:http2";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CertificateKeyType } from "@wap/api";
import { createPlatformClient } from "@wap/client";
import { formatMasterKey, generateMasterKey } from "@wap/core";
import { createServer, silentLogger } from "@wap/server";
import { freshBenchSchema } from "./postgres-schema.js";
import type { BenchFigure, BenchSection, BenchTarget } from "./results.js";
import { signUpWorkspaceOwner } from "./workspace-owner.js";

const selfPath = fileURLToPath(import.meta.url);
const connectPath = "/platform.v1.DaemonControlService/Connect";
const enrollPath = "/platform.v1.DaemonService/EnrollDaemon";
/** Concurrent stream opens per load child. */
const openConcurrency = 256;
const memoryTargetMiB = 1024;
const heartbeatP99TargetMs = 50;

// ---------------------------------------------------------------------------------------------
// Messages between the processes.

type ToServer = { kind: "memory" } | { kind: "stop" };
type FromServer =
  | { kind: "listening"; url: string }
  | { kind: "memory"; rss: number; heapUsed: number; external: number };
type ToLoader =
  | { kind: "enroll"; url: string; token: string; count: number; first: number }
  | { kind: "bare"; url: string; count: number }
  | { kind: "open" }
  | { kind: "pace"; what: "heartbeat" | "ping"; ratePerSecond: number }
  | { kind: "burst" }
  | { kind: "storm" }
  | { kind: "exit" };
type FromLoader =
  | { kind: "enrolled"; ms: number }
  | { kind: "opened"; ms: number; failed: number }
  | { kind: "latencies"; ms: number[]; failed: number }
  | { kind: "stormed"; reopenedMs: number; onlineMs: number; failed: number };

// ---------------------------------------------------------------------------------------------
// The orchestrator.

export async function runDaemonStreamsBench(options: { streams?: number } = {}): Promise<BenchSection> {
  const streams = options.streams ?? Number(process.env.BENCH_DAEMON_STREAMS ?? 10_000);
  const loaders = Math.max(1, Number(process.env.BENCH_DAEMON_LOADERS ?? 2));
  const heartbeatRate = Number(process.env.BENCH_HEARTBEAT_RATE ?? 1000);
  const shares = Array.from(
    { length: loaders },
    (_, i) => Math.floor(streams / loaders) + (i < streams % loaders ? 1 : 0),
  );
  const notes: string[] = [];
  const loadAtStart = loadavg()[0]!;
  const log = (text: string) => console.error(`[daemon-streams] ${text}`);

  // Baseline: N bare HTTP/2 connections on a fresh server.
  let bareKiB = 0;
  {
    // Nothing is stored: the embedded database whatever BENCH_DATABASE_URL says.
    const server = await startServerChild({ database: false });
    const children = shares.map(() => startLoader());
    try {
      const before = await server.memory();
      await Promise.all(
        children.map((child, i) =>
          child.request({ kind: "bare", url: server.url, count: shares[i]! }, "opened"),
        ),
      );
      const after = await server.memory();
      bareKiB = (after.rss - before.rss) / 1024 / streams;
      log(`bare connections: ${streams}, server RSS +${mib(after.rss - before.rss).toFixed(1)} MiB`);
    } finally {
      await Promise.all(children.map((child) => child.exit()));
      await server.stop();
    }
  }

  const server = await startServerChild({ database: true });
  const children = shares.map(() => startLoader());
  try {
    const client = createPlatformClient({ baseUrl: server.url });
    const { workspaceId } = await signUpWorkspaceOwner(client, "Fleet Owner", "fleet");
    await client.certificates.createCertificateAuthority({
      workspaceId,
      name: "ssh-hosts",
      keyType: CertificateKeyType.ED25519,
    });
    // Every daemon enrolled is accepted at once.
    await client.workspaces.updateWorkspaceSettings({ workspaceId, enrollAutoApprove: true });
    const { token } = await client.daemons.refreshEnrollToken({ workspaceId });
    const onlineCount = async () =>
      (await client.daemons.listDaemons({ workspaceId, online: true, limit: 1 })).total;

    const enrolled = await Promise.all(
      children.map((child, i) =>
        child.request(
          {
            kind: "enroll",
            url: server.url,
            token,
            count: shares[i]!,
            first: shares.slice(0, i).reduce((a, b) => a + b, 0),
          },
          "enrolled",
        ),
      ),
    );
    log(`enrolled ${streams} daemons in ${(Math.max(...enrolled.map((e) => e.ms)) / 1000).toFixed(1)} s`);

    const before = await server.memory();
    const opening = performance.now();
    const opened = await Promise.all(children.map((child) => child.request({ kind: "open" }, "opened")));
    const openFailed = opened.reduce((a, o) => a + o.failed, 0);
    log(`loaders opened their streams in ${opened.map((o) => Math.round(o.ms)).join(", ")} ms`);
    while ((await onlineCount()) < streams - openFailed) await sleep(100);
    const openSeconds = (performance.now() - opening) / 1000;
    const after = await server.memory();
    const open = streams - openFailed;
    log(`opened ${open} streams in ${openSeconds.toFixed(1)} s; RSS ${mib(after.rss).toFixed(0)} MiB`);

    const paced = async (what: "heartbeat" | "ping") => {
      const replies = await Promise.all(
        children.map((child) =>
          child.request({ kind: "pace", what, ratePerSecond: heartbeatRate / loaders }, "latencies"),
        ),
      );
      return { ms: replies.flatMap((r) => r.ms), failed: replies.reduce((a, r) => a + r.failed, 0) };
    };
    const pings = await paced("ping");
    const heartbeats = await paced("heartbeat");
    const burstStarted = performance.now();
    const burst = await Promise.all(children.map((child) => child.request({ kind: "burst" }, "latencies")));
    const burstSeconds = (performance.now() - burstStarted) / 1000;
    const burstMs = burst.flatMap((r) => r.ms);
    log(
      `heartbeats: p50 ${percentile(heartbeats.ms, 50).toFixed(2)} ms, p99 ${percentile(heartbeats.ms, 99).toFixed(2)} ms`,
    );

    const storming = performance.now();
    const stormed = await Promise.all(children.map((child) => child.request({ kind: "storm" }, "stormed")));
    const stormFailed = stormed.reduce((a, s) => a + s.failed, 0);
    let countedOnline = await onlineCount();
    while (countedOnline < streams - stormFailed) {
      await sleep(100);
      countedOnline = await onlineCount();
    }
    const stormSeconds = (performance.now() - storming) / 1000;
    const afterStorm = await server.memory();
    log(`reconnect storm: all online again after ${stormSeconds.toFixed(1)} s`);

    const perStreamKiB = (after.rss - before.rss) / 1024 / Math.max(1, open);
    const heapPerStreamKiB = (after.heapUsed - before.heapUsed) / 1024 / Math.max(1, open);
    const hb50 = percentile(heartbeats.ms, 50);
    const hb99 = percentile(heartbeats.ms, 99);
    const ping50 = percentile(pings.ms, 50);
    const ping99 = percentile(pings.ms, 99);
    const figures: BenchFigure[] = [
      { label: "control streams open at once", value: open, unit: "streams" },
      { label: "server RSS, daemons enrolled, no stream", value: round(mib(before.rss)), unit: "MiB" },
      { label: "server RSS, all streams open", value: round(mib(after.rss)), unit: "MiB" },
      { label: "server V8 heap used, no stream", value: round(mib(before.heapUsed)), unit: "MiB" },
      { label: "server V8 heap used, all streams open", value: round(mib(after.heapUsed)), unit: "MiB" },
      { label: "server RSS per stream (its connection included)", value: round(perStreamKiB), unit: "KiB" },
      { label: "server V8 heap per stream", value: round(heapPerStreamKiB), unit: "KiB" },
      {
        label: "server RSS per bare HTTP/2 connection (baseline server)",
        value: round(bareKiB),
        unit: "KiB",
      },
      { label: "time to open every stream (online counted)", value: round(openSeconds), unit: "s" },
      { label: `heartbeat round trip p50 (${heartbeatRate}/s)`, value: round(hb50, 2), unit: "ms" },
      { label: `heartbeat round trip p99 (${heartbeatRate}/s)`, value: round(hb99, 2), unit: "ms" },
      { label: `HTTP/2 PING round trip p50 (${heartbeatRate}/s)`, value: round(ping50, 2), unit: "ms" },
      { label: `HTTP/2 PING round trip p99 (${heartbeatRate}/s)`, value: round(ping99, 2), unit: "ms" },
      {
        label: "burst: every stream's heartbeat at once, p50",
        value: round(percentile(burstMs, 50), 1),
        unit: "ms",
      },
      {
        label: "burst: every stream's heartbeat at once, p99",
        value: round(percentile(burstMs, 99), 1),
        unit: "ms",
      },
      { label: "burst: until the last ack", value: round(burstSeconds, 2), unit: "s" },
      { label: "reconnect storm: until every daemon is online again", value: round(stormSeconds), unit: "s" },
      { label: "server RSS after the storm", value: round(mib(afterStorm.rss)), unit: "MiB" },
    ];
    const targets: BenchTarget[] = [
      {
        figure: "server RSS, all streams open",
        comparison: "<=",
        value: memoryTargetMiB,
        unit: "MiB",
        met: mib(after.rss) <= memoryTargetMiB && open >= 10_000,
      },
      {
        figure: `heartbeat round trip p99 (${heartbeatRate}/s)`,
        comparison: "<=",
        value: heartbeatP99TargetMs,
        unit: "ms",
        met: hb99 <= heartbeatP99TargetMs,
      },
    ];
    if (open < 10_000) notes.push(`Run with ${open} streams: the memory target is stated for 10,000.`);
    const failures = openFailed + heartbeats.failed + pings.failed + stormFailed;
    if (failures > 0) notes.push(`${failures} opens, heartbeats or pings failed: the figures are not valid.`);
    notes.push(
      `${loaders} load processes, one HTTP/2 connection per daemon; server on ${process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "embedded SQLite (synchronous=FULL: each signed request's nonce is a commit with its fsync)"}; Node ${process.version}; ${availableParallelism()} CPUs shared with the load processes; load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end.`,
    );
    return {
      title: "Daemon control streams",
      method: `${streams} enrolled daemons each hold DaemonControlService.Connect open (binary Connect, signed Platform challenge, own HTTP/2 connection) on one server process; memory after a full GC, heartbeat round trips paced at ${heartbeatRate}/s next to HTTP/2 PINGs, a burst, and a reconnect storm checked through ListDaemons.`,
      figures,
      comparisons: [
        {
          subject: figures[10]!,
          baseline: figures[12]!,
          ratio: round(hb99 / Math.max(ping99, 0.001), 2),
        },
        {
          subject: figures[5]!,
          baseline: figures[7]!,
          ratio: round(perStreamKiB / Math.max(bareKiB, 0.001), 2),
        },
      ],
      targets,
      series: [
        {
          label: "heartbeat round trip by percentile",
          xUnit: "percentile",
          yUnit: "ms",
          points: [50, 75, 90, 95, 99, 99.9, 100].map(
            (p) => [p, round(percentile(heartbeats.ms, p), 2)] as const,
          ),
        },
      ],
      notes,
    };
  } finally {
    await Promise.all(children.map((child) => child.exit()));
    await server.stop();
  }
}

const mib = (bytes: number) => bytes / 1024 / 1024;
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const childArgs = ["--conditions=dev-source", "--import", "tsx"];

async function startServerChild(options: { database: boolean }) {
  const schema =
    options.database && process.env.BENCH_DATABASE_URL
      ? await freshBenchSchema(process.env.BENCH_DATABASE_URL)
      : undefined;
  const child = fork(selfPath, [], {
    execArgv: [...childArgs, "--expose-gc"],
    env: {
      ...process.env,
      WAP_BENCH_ROLE: "server",
      BENCH_DATABASE_URL: schema?.url ?? "",
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const url = await new Promise<string>((done, fail) => {
    child.once("message", (message: FromServer) => {
      if (message.kind === "listening") done(message.url);
    });
    child.once("exit", (code) => fail(new Error(`the server child exited with ${code}`)));
  });
  return {
    url,
    memory: () => ask<Extract<FromServer, { kind: "memory" }>>(child, { kind: "memory" }, "memory"),
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((done) => child.once("exit", done));
        child.send({ kind: "stop" } satisfies ToServer);
        await exited;
      }
      await schema?.drop();
    },
  };
}

function startLoader() {
  const child = fork(selfPath, [], {
    execArgv: childArgs,
    env: { ...process.env, WAP_BENCH_ROLE: "load" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return {
    request<K extends FromLoader["kind"]>(message: ToLoader, reply: K) {
      return ask<Extract<FromLoader, { kind: K }>>(child, message, reply);
    },
    async exit() {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once("exit", done));
      child.send({ kind: "exit" } satisfies ToLoader);
      await exited;
    },
  };
}

function ask<T extends { kind: string }>(child: ChildProcess, message: object, reply: string): Promise<T> {
  return new Promise<T>((done, fail) => {
    const onMessage = (answer: T) => {
      if (answer.kind !== reply) return;
      child.off("message", onMessage);
      child.off("exit", onExit);
      done(answer);
    };
    const onExit = (code: number | null) => fail(new Error(`a bench child exited with ${code}`));
    child.on("message", onMessage);
    child.once("exit", onExit);
    child.send(message);
  });
}

// ---------------------------------------------------------------------------------------------
// The server child.

async function serve(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "wap-bench-daemons-"));
  const server = await createServer({
    port: 0,
    dataDir,
    ...(process.env.BENCH_DATABASE_URL && {
      databaseUrl: process.env.BENCH_DATABASE_URL,
      masterKey: formatMasterKey(generateMasterKey()),
    }),
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
    // Every HeartbeatAck the load sees answers its heartbeat.
    daemonKeepaliveSeconds: 3600,
    // Ten thousand daemons (and their targets) in one workspace, all from one address: far above
    // the default quotas and the per-client connection cap (0: none).
    workspaceMaxDaemons: 1_000_000,
    workspaceMaxTargets: 1_000_000,
    maxConnectionsPerClient: 0,
    shutdownGraceSeconds: 2,
  });
  const send = (message: FromServer) => process.send?.(message);
  send({ kind: "listening", url: server.url });
  process.on("message", async (message: ToServer) => {
    if (message.kind === "memory") {
      const gc = (globalThis as { gc?: () => void }).gc;
      for (let i = 0; i < 3; i++) {
        gc?.();
        await sleep(50);
      }
      const usage = process.memoryUsage();
      send({ kind: "memory", rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external });
    } else if (message.kind === "stop") {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
      process.exit(0);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// A load child: daemons with their keys and connections.

interface LoadDaemon {
  readonly id: string;
  readonly key: KeyObject;
  connection?: DaemonConnection;
}

/** `Platform <id>:<ts>:<nonce>:<procedure>:<sig>`, as the agent signs. */
function challenge(daemon: LoadDaemon, procedure: string): string {
  const signed = `${daemon.id}:${Math.floor(Date.now() / 1000)}:${randomBytes(12).toString("hex")}:${procedure}`;
  const signature = sign("sha256", Buffer.from(signed), { key: daemon.key, dsaEncoding: "der" });
  return `Platform ${signed}:${signature.toString("base64url")}`;
}

// Connect envelopes: flags (0, or 2 for the end of the stream), big-endian length, message.
// ConnectRequest{heartbeat: {}} is field 1, empty; so is ConnectResponse{heartbeat_ack: {}}.
const heartbeatEnvelope = Buffer.from([0, 0, 0, 0, 2, 0x0a, 0x00]);

/** One daemon's HTTP/2 connection and its control stream. */
class DaemonConnection {
  readonly session: http2.ClientHttp2Session;
  #stream: http2.ClientHttp2Stream | undefined;
  #buffered: Buffer = Buffer.alloc(0);
  #waiting: ((ok: boolean) => void) | undefined;
  #ended = false;

  constructor(url: string) {
    this.session = http2.connect(url);
    this.session.on("error", () => this.#end());
  }

  /** Opens the stream (no first message); resolves true at its first HeartbeatAck. */
  open(daemon: LoadDaemon): Promise<boolean> {
    const stream = this.session.request({
      ":method": "POST",
      ":path": connectPath,
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      authorization: challenge(daemon, connectPath),
      "platform-daemon-hostname": `bench-${daemon.id.slice(0, 8)}`,
    });
    this.#stream = stream;
    stream.on("data", (chunk: Buffer) => this.#read(chunk));
    stream.on("error", () => this.#end());
    stream.on("close", () => this.#end());
    return this.nextAck();
  }

  /** Resolves at the next HeartbeatAck (true), or when the stream ends (false). */
  nextAck(): Promise<boolean> {
    if (this.#ended) return Promise.resolve(false);
    return new Promise((done) => {
      this.#waiting = done;
    });
  }

  /** Sends a heartbeat; resolves to the round trip in ms, or -1 when the stream ended first. */
  async heartbeat(): Promise<number> {
    const started = performance.now();
    const acked = this.nextAck();
    this.#stream?.write(heartbeatEnvelope);
    return (await acked) ? performance.now() - started : -1;
  }

  ping(): Promise<number> {
    return new Promise((done) => {
      const sent = this.session.ping((error, duration) => done(error ? -1 : duration));
      if (!sent) done(-1);
    });
  }

  #read(chunk: Buffer): void {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    while (this.#buffered.length >= 5) {
      const length = this.#buffered.readUInt32BE(1);
      if (this.#buffered.length < 5 + length) return;
      const flags = this.#buffered[0]!;
      const first = this.#buffered[5];
      this.#buffered = this.#buffered.subarray(5 + length);
      if (flags & 2) this.#end();
      else if (first === 0x0a || length === 0) this.#resolve(true);
    }
  }

  #resolve(ok: boolean): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.(ok);
  }

  #end(): void {
    this.#ended = true;
    this.#resolve(false);
  }

  close(): void {
    this.session.destroy();
  }
}

/** Runs `task` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

async function load(): Promise<void> {
  let url = "";
  let daemons: LoadDaemon[] = [];
  let bare: http2.ClientHttp2Session[] = [];
  const send = (message: FromLoader) => process.send?.(message);

  const openAll = async (): Promise<number> => {
    let failed = 0;
    await eachLimited(daemons, openConcurrency, async (daemon) => {
      const connection = new DaemonConnection(url);
      daemon.connection = connection;
      if (!(await connection.open(daemon))) failed++;
    });
    return failed;
  };

  process.on("message", async (message: ToLoader) => {
    switch (message.kind) {
      case "bare": {
        const started = performance.now();
        await eachLimited(
          Array.from({ length: message.count }, (_, i) => i),
          openConcurrency,
          async () => {
            const session = http2.connect(message.url);
            bare.push(session);
            await new Promise<void>((done) => {
              session.once("connect", () => done());
              session.once("error", () => done());
            });
          },
        );
        send({ kind: "opened", ms: performance.now() - started, failed: 0 });
        break;
      }
      case "enroll": {
        url = message.url;
        const started = performance.now();
        const session = http2.connect(url);
        const keys = Array.from({ length: message.count }, (_, index) => ({
          index,
          ...generateKeyPairSync("ec", { namedCurve: "P-256" }),
        }));
        const enrolled: LoadDaemon[] = [];
        await eachLimited(keys, 16, async ({ index, privateKey, publicKey }) => {
          const body = JSON.stringify({
            token: message.token,
            caId: "",
            authMethod: "soft",
            authPubkey: publicKey.export({ type: "spki", format: "pem" }).toString(),
          });
          const answer = await new Promise<string>((done, fail) => {
            const request = session.request({
              ":method": "POST",
              ":path": enrollPath,
              "content-type": "application/json",
              "connect-protocol-version": "1",
              "platform-daemon-hostname": `bench-host-${message.first + index}`,
            });
            let text = "";
            request.setEncoding("utf8");
            request.on("data", (chunk: string) => {
              text += chunk;
            });
            request.on("end", () => done(text));
            request.on("error", fail);
            request.end(body);
          });
          const { id } = JSON.parse(answer) as { id?: string };
          if (!id) throw new Error(`EnrollDaemon failed: ${answer}`);
          enrolled.push({ id, key: privateKey });
        });
        session.close();
        daemons = enrolled;
        send({ kind: "enrolled", ms: performance.now() - started });
        break;
      }
      case "open": {
        const started = performance.now();
        const failed = await openAll();
        send({ kind: "opened", ms: performance.now() - started, failed });
        break;
      }
      case "pace": {
        const interval = 1000 / message.ratePerSecond;
        const started = performance.now();
        const rounds: Promise<number>[] = [];
        for (let i = 0; i < daemons.length; i++) {
          const due = started + i * interval;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          const connection = daemons[i]!.connection!;
          rounds.push(message.what === "ping" ? connection.ping() : connection.heartbeat());
        }
        const results = await Promise.all(rounds);
        send({
          kind: "latencies",
          ms: results.filter((ms) => ms >= 0),
          failed: results.filter((ms) => ms < 0).length,
        });
        break;
      }
      case "burst": {
        const results = await Promise.all(daemons.map((daemon) => daemon.connection!.heartbeat()));
        send({
          kind: "latencies",
          ms: results.filter((ms) => ms >= 0),
          failed: results.filter((ms) => ms < 0).length,
        });
        break;
      }
      case "storm": {
        const started = performance.now();
        for (const daemon of daemons) daemon.connection?.close();
        let failed = await openAll();
        const reopenedMs = performance.now() - started;
        // Online once its stream answers a heartbeat: the server reads requests only then.
        const answered = await Promise.all(daemons.map((daemon) => daemon.connection!.heartbeat()));
        failed += answered.filter((ms) => ms < 0).length;
        send({ kind: "stormed", reopenedMs, onlineMs: performance.now() - started, failed });
        break;
      }
      case "exit":
        for (const daemon of daemons) daemon.connection?.close();
        for (const session of bare) session.destroy();
        bare = [];
        process.exit(0);
    }
  });
}

// ---------------------------------------------------------------------------------------------

const role = process.env.WAP_BENCH_ROLE;
if (role === "server") await serve();
else if (role === "load") await load();
else if (process.argv[1] !== undefined && resolve(process.argv[1]) === selfPath) {
  const section = await runDaemonStreamsBench();
  console.log(`\n${section.title}\n${section.method}\n`);
  for (const figure of section.figures) console.log(`  ${figure.label}: ${figure.value} ${figure.unit}`);
  for (const c of section.comparisons) {
    console.log(`  ratio ${c.subject.label} / ${c.baseline.label}: ${c.ratio}`);
  }
  for (const target of section.targets) {
    console.log(
      `  target ${target.figure} ${target.comparison} ${target.value} ${target.unit}: ${target.met ? "met" : "NOT met"}`,
    );
  }
  for (const note of section.notes) console.log(`  note: ${note}`);
}

/**
 * A small closed-loop HTTP/2 load generator: `concurrency` requests in flight on one connection
 * for `seconds`, then rate and latency percentiles. Both sides of a comparison go through this
 * same code, so client overhead cancels out of the ratio.
 *
 * Each request's latency goes into a histogram (histogram.ts), and completions are counted per
 * interval of {@link intervalSeconds}: the rate over time shows warm-up, GC pauses and stalls that
 * one average hides.
 */
import http2 from "node:http2";
import { createLatencyHistogram, type LatencyHistogram } from "./histogram.js";

/** The width of one throughput-over-time interval. */
export const intervalSeconds = 0.5;

/** The percentiles of the latency curve each result carries. */
export const reportedPercentiles = [50, 75, 90, 95, 99, 99.9] as const;

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** CPU time of the load generator's process per request (µs): its share of the two cores. */
  readonly clientCpuUsPerRequest: number;
  /** `[end of interval in s, completions per second in it]`, one per interval of the run. */
  readonly throughput: readonly (readonly [number, number])[];
  /** `[percentile, latency in ms]` for each of {@link reportedPercentiles}. */
  readonly latencyCurve: readonly (readonly [number, number])[];
  /** The TLS version negotiated (e.g. `TLSv1.3`), over https. */
  readonly tls?: string;
}

export interface RequestSpec {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  /** One body per request, taken in turn instead of `body` (e.g. one-time tokens). */
  readonly bodies?: readonly string[];
  /** PEM certificate an https server's certificate is checked against. */
  readonly ca?: string;
}

export async function runLoad(
  baseUrl: string,
  spec: RequestSpec,
  options: { seconds: number; concurrency: number },
): Promise<LoadResult> {
  const session = http2.connect(baseUrl, spec.ca === undefined ? {} : { ca: spec.ca });
  await new Promise<void>((resolve, reject) =>
    session.once("connect", () => resolve()).once("error", reject),
  );
  const tls = (session.socket as { getProtocol?: () => string | null }).getProtocol?.() ?? null;
  const latencies = createLatencyHistogram();
  const completedPerInterval: number[] = [];
  let errors = 0;
  const deadline = performance.now() + options.seconds * 1000;
  const fixedBody = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const bodies = spec.bodies?.map((b) => Buffer.from(b));
  let next = 0;

  const one = () =>
    new Promise<number>((resolve) => {
      const body = bodies === undefined ? fixedBody : bodies[next++ % bodies.length];
      const started = performance.now();
      const stream = session.request({
        ":method": spec.method,
        ":path": spec.path,
        ...(body && { "content-length": String(body.length) }),
        ...spec.headers,
      });
      let status = 0;
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
      });
      stream.on("data", () => {});
      stream.on("end", () => {
        if (status < 200 || status > 299) errors++;
        resolve(performance.now() - started);
      });
      stream.on("error", () => {
        errors++;
        resolve(performance.now() - started);
      });
      stream.end(body);
    });

  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < deadline) {
        latencies.record(await one());
        const interval = Math.floor((performance.now() - started) / 1000 / intervalSeconds);
        completedPerInterval[interval] = (completedPerInterval[interval] ?? 0) + 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  session.close();
  return {
    ...summarize({ latencies, completedPerInterval, elapsed, errors, clientCpuUs: cpu.user + cpu.system }),
    ...(tls !== null && { tls }),
  };
}

/**
 * The result of a run from its latencies, its completions per interval of {@link intervalSeconds}
 * (index 0 is the first interval), its length in seconds, its failures and the client's CPU time.
 */
export function summarize(run: {
  readonly latencies: LatencyHistogram;
  readonly completedPerInterval: readonly (number | undefined)[];
  readonly elapsed: number;
  readonly errors: number;
  readonly clientCpuUs: number;
}): LoadResult {
  const { latencies, elapsed } = run;
  const requests = latencies.count;
  return {
    requests,
    errors: run.errors,
    seconds: elapsed,
    perSecond: elapsed > 0 ? requests / elapsed : 0,
    p50Ms: latencies.percentile(50),
    p90Ms: latencies.percentile(90),
    p99Ms: latencies.percentile(99),
    maxMs: latencies.maxMs,
    clientCpuUsPerRequest: run.clientCpuUs / Math.max(1, requests),
    throughput: Array.from(run.completedPerInterval, (n, i) => {
      const end = Math.min(elapsed, (i + 1) * intervalSeconds);
      return { end, width: end - i * intervalSeconds, n: n ?? 0 };
    })
      // The requests in flight at the deadline finish in a sliver of an interval: left out.
      .filter(({ width }) => width >= intervalSeconds / 2)
      .map(({ end, width, n }) => [round(end, 2), round(n / width, 0)] as const),
    latencyCurve: reportedPercentiles.map((p) => [p, round(latencies.percentile(p), 3)] as const),
  };
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));

/** Runs {@link runLoad} in a child process (see load-worker.ts) and returns its figures. */
export async function runLoadInChild(
  baseUrl: string,
  spec: RequestSpec,
  options: { seconds: number; concurrency: number },
): Promise<LoadResult> {
  const { fork } = await import("node:child_process");
  const child = fork(new URL("./load-worker.ts", import.meta.url), {
    execArgv: ["--conditions=dev-source", "--import", "tsx"],
    // A binary body crosses as bytes.
    serialization: "advanced",
  });
  return new Promise((resolve, reject) => {
    child.once("message", (result) => resolve(result as LoadResult));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send({ baseUrl, spec, ...options });
  });
}

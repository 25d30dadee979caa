/**
 * A small closed-loop HTTP/2 load generator: `concurrency` requests in flight on one connection
 * for `seconds`, then rate and latency percentiles. Both sides of a comparison go through this
 * same code, so client overhead cancels out of the ratio.
 */
import http2 from "node:http2";

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU time of the load generator's process per request (µs): its share of the two cores. */
  readonly clientCpuUsPerRequest: number;
}

export interface RequestSpec {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

export async function runLoad(
  baseUrl: string,
  spec: RequestSpec,
  options: { seconds: number; concurrency: number },
): Promise<LoadResult> {
  const session = http2.connect(baseUrl);
  await new Promise<void>((resolve, reject) =>
    session.once("connect", () => resolve()).once("error", reject),
  );
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + options.seconds * 1000;
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);

  const one = () =>
    new Promise<number>((resolve) => {
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
        if (status !== 200) errors++;
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
      while (performance.now() < deadline) latencies.push(await one());
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  session.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    errors,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    clientCpuUsPerRequest: (cpu.user + cpu.system) / Math.max(1, latencies.length),
  };
}

/** Runs {@link runLoad} in a child process (see load-worker.ts) and returns its figures. */
export async function runLoadInChild(
  baseUrl: string,
  spec: RequestSpec,
  options: { seconds: number; concurrency: number },
): Promise<LoadResult> {
  const { fork } = await import("node:child_process");
  const child = fork(new URL("./load-worker.ts", import.meta.url), {
    execArgv: ["--conditions=dev-source", "--import", "tsx"],
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

/**
 * Reading h2load's per-request log into the figures of a run: every logged request counted,
 * failures told from successes (including those only the summary counts), latency percentiles,
 * the rate over the run and over time, the client's CPU per request.
 */
import { describe, expect, it } from "vitest";
import { resultFromLog } from "./h2load.js";

const epochUs = 1_763_700_000_000_000;

/** A log of `count` requests, one every `everyUs`, each taking `durationUs`, with `status`. */
function log(count: number, everyUs: number, durationUs: (i: number) => number, status = (_: number) => 200) {
  return Array.from(
    { length: count },
    (_, i) => `${epochUs + i * everyUs}\t${status(i)}\t${durationUs(i)}`,
  ).join("\n");
}

describe("resultFromLog", () => {
  it("counts requests, rate and latencies", () => {
    // 2,000 requests over 2 s: one every 1 ms, taking 1 to 10 ms.
    const result = resultFromLog(`${log(2000, 1000, (i) => 1000 + (i % 10) * 1000)}\n`, "0 errored", 0.5);
    expect(result.requests).toBe(2000);
    expect(result.errors).toBe(0);
    expect(result.seconds).toBeCloseTo((1999 * 1000 + 10_000) / 1e6, 6);
    expect(result.perSecond).toBeCloseTo(2000 / result.seconds, 6);
    expect(result.p50Ms).toBeGreaterThanOrEqual(5);
    expect(result.p50Ms).toBeLessThanOrEqual(6 * 1.01);
    expect(result.p99Ms).toBeGreaterThanOrEqual(10);
    expect(result.maxMs).toBe(10);
    expect(result.clientCpuUsPerRequest).toBe(250);
    // 0.5 s intervals: about 500 completions each, 1,000 per second.
    const rates = result.throughput.map(([, rate]) => rate);
    expect(rates.length).toBe(4);
    for (const rate of rates) expect(rate).toBeGreaterThan(950);
  });

  it("counts answers other than 200, and requests only the summary counts, as failures", () => {
    const result = resultFromLog(
      log(
        100,
        1000,
        () => 500,
        (i) => (i % 4 === 0 ? 503 : 200),
      ),
      "requests: 103 total, 103 started, 100 done, 75 succeeded, 25 failed, 3 errored, 0 timeout",
      0.01,
    );
    expect(result.requests).toBe(100);
    expect(result.errors).toBe(25 + 3);
  });

  it("reads an empty log as no requests", () => {
    const result = resultFromLog("", "", 0);
    expect(result.requests).toBe(0);
    expect(result.perSecond).toBe(0);
    expect(result.throughput).toEqual([]);
  });
});

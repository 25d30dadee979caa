/**
 * A latency histogram of fixed size: log-spaced buckets, each 1% wider than the one before, from
 * 1 µs up. A percentile read from it is within 1% of the exact one, however many requests were
 * recorded, so a long run does not keep one number per request.
 */

const growth = 1.01;
const smallestMs = 0.001;
const logGrowth = Math.log(growth);

export interface LatencyHistogram {
  /** Adds one request's latency. */
  record(ms: number): void;
  readonly count: number;
  readonly maxMs: number;
  readonly meanMs: number;
  /** The latency `p` percent of the requests stayed within (0 < p <= 100); 0 when empty. */
  percentile(p: number): number;
}

export function createLatencyHistogram(): LatencyHistogram {
  const counts = new Map<number, number>();
  let count = 0;
  let sum = 0;
  let max = 0;
  const bucketOf = (ms: number) => (ms <= smallestMs ? 0 : Math.ceil(Math.log(ms / smallestMs) / logGrowth));
  /** The upper edge of a bucket: what its requests stayed within. */
  const edgeOf = (bucket: number) => smallestMs * growth ** bucket;
  return {
    record(ms) {
      const value = Math.max(0, ms);
      const bucket = bucketOf(value);
      counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
      count++;
      sum += value;
      if (value > max) max = value;
    },
    get count() {
      return count;
    },
    get maxMs() {
      return max;
    },
    get meanMs() {
      return count === 0 ? 0 : sum / count;
    },
    percentile(p) {
      if (count === 0) return 0;
      const rank = Math.max(1, Math.ceil((Math.min(100, Math.max(0, p)) / 100) * count));
      let seen = 0;
      for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
        seen += counts.get(bucket)!;
        // Never above the largest value seen: the last bucket's edge may overshoot it.
        if (seen >= rank) return Math.min(edgeOf(bucket), max);
      }
      return max;
    },
  };
}

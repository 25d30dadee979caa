/**
 * Where the event loop's time per request goes: a sampling CPU profile of the server's own
 * process (node:inspector) taken over a second load run, each sample charged to one part of the
 * request path, and the shares scaled to the event loop µs per request of the unprofiled run (the
 * profiler slows the run down; the shares hold, the absolute times would not).
 *
 * A sample is charged by walking its stack from the leaf up to the first frame a rule claims, so
 * Node's stream and event plumbing under an HTTP/2 frame counts as HTTP/2, and a crypto call under
 * token verification counts as crypto.
 *
 * @module
 */
import { Session } from "node:inspector/promises";

/** One part of the request path, and which frames belong to it. */
interface Part {
  readonly name: string;
  readonly claims: (url: string, functionName: string) => boolean;
}

const parts: readonly Part[] = [
  { name: "garbage collection", claims: (_, fn) => fn === "(garbage collector)" },
  {
    name: "native, no JS frame (TLS records, HTTP/2 frames, libuv)",
    claims: (_, fn) => fn === "(program)",
  },
  {
    name: "logging (request log lines)",
    claims: (url) => /server\/src\/(logger|log-writer)/.test(url),
  },
  {
    name: "worker-thread hand-off (messages to and from threads)",
    claims: (url) => /^node:internal\/(worker|per_context\/messageport)/.test(url),
  },
  { name: "TLS (Node)", claims: (url) => /^node:(internal\/)?(_?tls|tls_wrap)/.test(url) },
  {
    name: "storage (SQLite statements, row mapping)",
    claims: (url) => /storage-sqlite|storage-sql\/|better-sqlite3|kysely/.test(url),
  },
  { name: "crypto (signatures, hashes, sealing)", claims: (url) => url.startsWith("node:internal/crypto") },
  {
    name: "protobuf and Connect (decode, encode, JSON)",
    claims: (url) => /@bufbuild\/protobuf|@connectrpc\/|server\/src\/lean\/json-writer/.test(url),
  },
  { name: "tracing", claims: (url) => url.includes("@opentelemetry") },
  {
    name: "authentication (token, session, caller)",
    claims: (url) => /packages\/core\/src\/(auth|tokens)\//.test(url),
  },
  {
    name: "HTTP/2 and streams (Node)",
    claims: (url) => /^node:(internal\/)?(http2|net|stream)/.test(url),
  },
  {
    name: "server edge (routing, limits, context, logging)",
    claims: (url) => url.includes("packages/server/src") || url.includes("/hono/"),
  },
  { name: "operation, validation, access (core)", claims: (url) => url.includes("packages/core/src") },
];
const unclaimed = "other (promises, timers, V8 glue)";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}
export interface Profile {
  readonly nodes: readonly ProfileNode[];
  /** µs on the monotonic clock (`process.hrtime`) when profiling started. */
  readonly startTime?: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * The samples of `profile` taken between `from` and `to` (µs on the monotonic clock, as
 * `process.hrtime.bigint() / 1000n`): a whole process's profile cut to a load run, its start-up
 * and shutdown left out.
 */
export function profileWindow(profile: Profile, from: number, to: number): Profile {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let at = profile.startTime ?? 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at < from || at > to) return;
    samples.push(id);
    timeDeltas.push(dt);
  });
  return { ...profile, samples, timeDeltas };
}

/** The share of the busy time each part took (idle samples left out), largest first. */
export function chargeSamples(profile: Profile): { part: string; share: number }[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const partOf = new Map<number, string | null>();
  const charge = (id: number): string | null => {
    const known = partOf.get(id);
    if (known !== undefined) return known;
    const { url, functionName } = byId.get(id)!.callFrame;
    if (functionName === "(idle)") return null;
    const part = parts.find((p) => p.claims(url, functionName))?.name;
    const up = parent.get(id);
    const result = part ?? (up === undefined ? unclaimed : charge(up));
    partOf.set(id, result);
    return result;
  };
  const time = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const part = charge(id);
    const dt = profile.timeDeltas[i] ?? 0;
    if (part === null) return;
    busy += dt;
    time.set(part, (time.get(part) ?? 0) + dt);
  });
  return [...time]
    .map(([part, t]) => ({ part, share: busy > 0 ? t / busy : 0 }))
    .sort((a, b) => b.share - a.share);
}

/** Profiles this process while `run` runs. */
export async function profileWhile(run: () => Promise<unknown>): Promise<Profile> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
    await run();
    const { profile } = await session.post("Profiler.stop");
    return profile as unknown as Profile;
  } finally {
    session.disconnect();
  }
}

/** Each part's µs of event loop per request, from its share and the unprofiled run's total. */
export function callBudget(profile: Profile, eventLoopUsPerRequest: number) {
  return chargeSamples(profile).map(({ part, share }) => ({
    part,
    share,
    microseconds: share * eventLoopUsPerRequest,
  }));
}

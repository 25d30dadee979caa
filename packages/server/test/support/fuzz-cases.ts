/**
 * One fuzzed call of an RPC: who sends it, the request (valid-shaped or malformed), how its bytes
 * are spoiled, and the protocol details (content type, headers, REST path encoding, Connect GET,
 * stream framing) that go with it.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import fc from "fast-check";
import type { RestRoute } from "../../src/rest/index.js";
import { boundedRequests } from "./fuzz-bounds.js";
import {
  headerText,
  type Json,
  type JsonObject,
  malform,
  malformation,
  messageArbitrary,
  trickyString,
  type ValuePools,
  withProtoNames,
} from "./fuzz-values.js";
import { type CallerName, callerNames } from "./fuzz-world.js";

/** Spoiling the serialised body. */
export type RawMutation =
  | { readonly kind: "truncate"; readonly at: number }
  | { readonly kind: "append"; readonly text: string }
  | { readonly kind: "bom" }
  | { readonly kind: "invalid-utf8"; readonly at: number }
  | { readonly kind: "empty" }
  | { readonly kind: "huge" }
  | { readonly kind: "duplicate-key" }
  | { readonly kind: "deep"; readonly depth: number; readonly array: boolean }
  | { readonly kind: "replace"; readonly text: string };

/** How REST path variables are written. */
export type PathEncoding = "encoded" | "raw" | "double" | "bad-percent";

export interface FuzzCase {
  readonly caller: CallerName;
  /** The `Authorization` value of the `garbage` caller. */
  readonly garbage: string;
  /** The request as JSON (an object unless malformed). */
  readonly request: Json;
  readonly raw: RawMutation | undefined;
  /** Replaces `application/json` (or the stream's content type); "" sends none. */
  readonly contentType: string | undefined;
  /** Protocol and edge headers: version, timeout, encodings, request id, origin... */
  readonly headers: Readonly<Record<string, string>>;
  /** Unary RPCs: send as Connect GET instead of POST. */
  readonly connectGet: { readonly base64: boolean; readonly badBase64: boolean } | undefined;
  readonly rest: {
    /** Which binding, when the RPC has several. */
    readonly route: number;
    /** Another HTTP method than the binding's. */
    readonly method: string | undefined;
    readonly encoding: PathEncoding;
    /** For a path variable the request does not carry. */
    readonly fallback: string;
  };
  readonly stream: {
    /** Bidi streams: half-close after the first message (server streams always do). */
    readonly endRequest: boolean;
    /** More messages after the first (bidi streams). */
    readonly more: readonly Json[];
    /** A broken envelope after the messages. */
    readonly badEnvelope: "compressed-flag" | "short-length" | "end-stream-flag" | "oversized" | undefined;
  };
}

const rawMutation: fc.Arbitrary<RawMutation> = fc.oneof(
  fc.record({ kind: fc.constant("truncate" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({
    kind: fc.constant("append" as const),
    text: fc.constantFrom("}", ",", " x", "{}", "\u0000", "]", '"'),
  }),
  fc.constant({ kind: "bom" as const }),
  fc.record({ kind: fc.constant("invalid-utf8" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.constant({ kind: "empty" as const }),
  fc.constant({ kind: "huge" as const }),
  fc.constant({ kind: "duplicate-key" as const }),
  fc.record({
    kind: fc.constant("deep" as const),
    depth: fc.constantFrom(64, 1000, 100_000),
    array: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("replace" as const),
    text: fc.constantFrom(
      "NaN",
      "Infinity",
      "{,}",
      "{'a':1}",
      "// comment\n{}",
      "[]",
      "null",
      '"string"',
      "123",
      "{}garbage",
      '{"a":1,}',
      "\uFEFF{}",
      '{"workspaceId":"\\ud800"}',
      '{"name":"\\u0000"}',
      '{"a":1e999999}',
    ),
  }),
);

const contentTypes = fc.constantFrom(
  "",
  "text/plain",
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "APPLICATION/JSON",
  "application/json; charset=utf-16",
  "application/proto",
  "application/x-protobuf",
  "application/connect+json",
  "application/connect+proto",
  "application/grpc",
  "application/grpc+json",
  "application/grpc-web+json",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json, text/plain",
);

/** Headers a client may send, and some no client should. */
const protocolHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    "connect-protocol-version": fc.constantFrom("1", "2", "", "v1"),
    "connect-timeout-ms": fc.constantFrom("0", "1", "-1", "abc", "10000", "99999999999", "1.5"),
    "content-encoding": fc.constantFrom("gzip", "br", "identity", "zstd", "deflate"),
    "connect-content-encoding": fc.constantFrom("gzip", "br", "identity", "zstd"),
    "accept-encoding": fc.constantFrom("gzip", "br", "*", "zstd, gzip;q=0"),
    "x-request-id": fc.oneof(headerText(200), fc.constantFrom("", "ok-id.1", "../x")),
    "x-forwarded-for": fc.oneof(headerText(64), fc.constantFrom("1.2.3.4, 5.6.7.8", "::1", "garbage")),
    origin: fc.constantFrom("https://evil.example", "null", "http://127.0.0.1", ""),
    "sec-fetch-site": fc.constantFrom("cross-site", "same-origin", "none", "same-site"),
    "user-agent": headerText(600),
    "platform-daemon-hostname": fc.oneof(headerText(80), fc.constantFrom("host-1", "", "-")),
    "platform-client-device-id": fc.oneof(fc.uuid(), headerText(40)),
  },
  { requiredKeys: [] },
);

/** Which of the valid-shaped, malformed and spoiled variants a case is, by weight. */
export interface CaseWeights {
  /** Requests from the descriptor, from the bounds within them, and just outside them (relative). */
  readonly shaped: number;
  readonly withinBounds: number;
  readonly outsideBounds: number;
  /** Probabilities: a descriptor-shaped request malformed; the body, content type, headers spoiled. */
  readonly malformed: number;
  readonly raw: number;
  readonly contentType: number;
  readonly headers: number;
}

const defaultWeights: CaseWeights = {
  shaped: 6,
  withinBounds: 2,
  outsideBounds: 2,
  malformed: 0.25,
  raw: 0.12,
  contentType: 0.08,
  headers: 0.15,
};

function sometimes<T>(arbitrary: fc.Arbitrary<T>, probability: number): fc.Arbitrary<T | undefined> {
  const weight = Math.round(probability * 100);
  return fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 100 - weight },
    { arbitrary: arbitrary as fc.Arbitrary<T | undefined>, weight },
  );
}

/** Every fuzzed call of `method`: the request from its descriptor, the rest from the tables above. */
export function caseArbitrary(
  method: DescMethod,
  routes: readonly RestRoute[],
  pools: ValuePools,
  garbage: readonly string[],
  weights: CaseWeights = defaultWeights,
): fc.Arbitrary<FuzzCase> {
  const scoped: ValuePools = { ...pools, service: method.parent.name };
  const ids = Object.values(pools.ids).flat();
  // Fields a REST path binds are (nearly) always set, so the path can be built from them.
  const bound = routes.flatMap((r) => r.template.variables.map((v) => v.fieldPath.split(".")[0]!));
  // Valid-shaped from the descriptor (then malformed or not), or drawn from the validation
  // bounds: within every bound, or with one field just outside its bound.
  const shapedRequest = fc
    .tuple(
      messageArbitrary(method.input, scoped, { required: bound }),
      sometimes(malformation, weights.malformed),
    )
    .map(([valid, how]): Json => (how ? malform(method.input, valid, how) : valid));
  const bounded = boundedRequests(method, scoped);
  const drawn: Array<fc.WeightedArbitrary<Json>> = [{ arbitrary: shapedRequest, weight: weights.shaped }];
  if (bounded) drawn.push({ arbitrary: bounded.valid, weight: weights.withinBounds });
  if (bounded?.justOutside) drawn.push({ arbitrary: bounded.justOutside, weight: weights.outsideBounds });
  const request = fc.tuple(fc.oneof(...drawn), fc.boolean(), fc.nat({ max: 9 })).map(
    ([shaped, protoNames, dice]): Json =>
      // Sometimes with proto names (`workspace_id`), which canonical JSON also accepts.
      protoNames && dice < 2 ? withProtoNames(method.input, shaped) : shaped,
  );
  const more = fc.array(messageArbitrary(method.input, scoped) as fc.Arbitrary<JsonObject>, { maxLength: 2 });
  return fc.record({
    caller: fc.constantFrom(...callerNames),
    garbage: garbage.length > 0 ? fc.constantFrom(...garbage) : fc.constant("Bearer x"),
    request,
    raw: sometimes(rawMutation, weights.raw),
    contentType: sometimes(contentTypes, weights.contentType),
    headers: fc.oneof(
      { arbitrary: fc.constant({}), weight: Math.round((1 - weights.headers) * 100) },
      { arbitrary: protocolHeaders, weight: Math.round(weights.headers * 100) },
    ),
    connectGet: sometimes(fc.record({ base64: fc.boolean(), badBase64: fc.boolean() }), 0.1),
    rest: fc.record({
      route: fc.nat({ max: 7 }),
      method: sometimes(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"), 0.05),
      encoding: fc.oneof(
        { arbitrary: fc.constant("encoded" as const), weight: 16 },
        { arbitrary: fc.constantFrom("raw" as const, "double" as const, "bad-percent" as const), weight: 3 },
      ),
      fallback: fc.oneof(ids.length > 0 ? fc.constantFrom(...ids) : fc.uuid(), trickyString),
    }),
    stream: fc.record({
      endRequest: fc.boolean(),
      more,
      badEnvelope: sometimes(
        fc.constantFrom(
          "compressed-flag" as const,
          "short-length" as const,
          "end-stream-flag" as const,
          "oversized" as const,
        ),
        0.15,
      ),
    }),
  });
}

/**
 * What every answer to a fuzzed request must be, whatever was sent: no 5xx, never `internal` or
 * `unknown`, an error body of the protocol's shape with the HTTP status of its code and (REST) a
 * reason declared for that code in the core's registry, and, on a stream, frames (or NDJSON lines) that parse and an error, if any, of the same kind.
 */
import http2 from "node:http2";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { reasonDeclaration } from "@wap/core/internal";
import type { Exchange } from "./fuzz-send.js";
import { framesOf } from "./fuzz-send.js";

/** The Connect codes and their HTTP statuses, with google.rpc.Code numbers. */
const codes = {
  canceled: { status: 499, number: 1 },
  unknown: { status: 500, number: 2 },
  invalid_argument: { status: 400, number: 3 },
  deadline_exceeded: { status: 504, number: 4 },
  not_found: { status: 404, number: 5 },
  already_exists: { status: 409, number: 6 },
  permission_denied: { status: 403, number: 7 },
  resource_exhausted: { status: 429, number: 8 },
  failed_precondition: { status: 400, number: 9 },
  aborted: { status: 409, number: 10 },
  out_of_range: { status: 400, number: 11 },
  unimplemented: { status: 501, number: 12 },
  internal: { status: 500, number: 13 },
  unavailable: { status: 503, number: 14 },
  data_loss: { status: 500, number: 15 },
  unauthenticated: { status: 401, number: 16 },
} as const;
type CodeName = keyof typeof codes;

const forbidden = new Set<CodeName>(["internal", "unknown", "data_loss"]);
const codeByNumber = new Map<number, CodeName>(
  Object.entries(codes).map(([name, { number }]) => [number, name as CodeName]),
);

export interface Expectations {
  /** The request carried a Connect-Timeout-Ms: `deadline_exceeded` (504) is its own doing. */
  readonly deadlineSet: boolean;
  /**
   * The request named a compression the server does not speak: the Connect protocol answers
   * `unimplemented` (501), on Connect paths only.
   */
  readonly unsupportedCompression: boolean;
}

/** What a Connect answer may be for a request that carried `headers`. */
export function expectationsFor(headers: Readonly<Record<string, string>>): Expectations {
  const supported = new Set(["gzip", "br", "identity", ""]);
  const named = [headers["content-encoding"], headers["connect-content-encoding"]];
  return {
    deadlineSet: "connect-timeout-ms" in headers,
    unsupportedCompression: named.some((name) => name !== undefined && !supported.has(name)),
  };
}

type JsonAny = Record<string, unknown>;

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const isObject = (value: unknown): value is JsonAny =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Problems with a Connect error object (`{code, message, details}`), or none. */
function connectErrorProblems(error: unknown, expect: Expectations): string[] {
  if (!isObject(error)) return ["the error is not a JSON object"];
  const problems: string[] = [];
  const code = error.code as CodeName;
  if (typeof error.code !== "string" || !(code in codes))
    problems.push(`unknown code ${JSON.stringify(error.code)}`);
  else if (forbidden.has(code)) problems.push(`code ${code}`);
  else if (code === "deadline_exceeded" && !expect.deadlineSet)
    problems.push("deadline_exceeded without a deadline");
  if (error.message !== undefined && typeof error.message !== "string")
    problems.push("message is not a string");
  if (error.details !== undefined) {
    if (!Array.isArray(error.details)) problems.push("details is not an array");
    else if (
      !error.details.every((d) => isObject(d) && typeof d.type === "string" && typeof d.value === "string")
    )
      problems.push("a detail lacks its type or value");
  }
  return problems;
}

/** Problems with a google.rpc.Status body (REST errors), or none. */
function restErrorProblems(body: unknown, status: number, expect: Expectations): string[] {
  if (!isObject(body)) return ["the error body is not a JSON object"];
  const problems: string[] = [];
  const name = typeof body.code === "number" ? codeByNumber.get(body.code) : undefined;
  if (name === undefined) problems.push(`unknown code ${JSON.stringify(body.code)}`);
  else {
    if (forbidden.has(name)) problems.push(`code ${name}`);
    if (name === "deadline_exceeded" && !expect.deadlineSet)
      problems.push("deadline_exceeded without a deadline");
    const statusFits =
      status === codes[name].status ||
      (status === 405 && name === "unimplemented") ||
      (status === 413 && name === "resource_exhausted") ||
      // A REST body that is not application/json.
      (status === 415 && name === "invalid_argument");
    if (!statusFits) problems.push(`HTTP ${status} for code ${name}`);
  }
  if (typeof body.message !== "string") problems.push("message is not a string");
  if (
    !Array.isArray(body.details) ||
    !body.details.every((d) => isObject(d) && typeof d["@type"] === "string")
  )
    problems.push("details is not a list of typed details");
  else {
    for (const detail of body.details as JsonAny[]) {
      if (detail["@type"] !== "type.googleapis.com/google.rpc.ErrorInfo") continue;
      const declared = reasonDeclaration(String(detail.reason));
      if (declared === undefined) problems.push(`undeclared reason ${JSON.stringify(detail.reason)}`);
      else if (name !== undefined && !declared.codes.includes(name))
        problems.push(`reason ${declared.reason} with code ${name}`);
    }
  }
  return problems;
}

function statusProblems(x: Exchange, expect: Expectations): string[] {
  if (x.status < 500) return [];
  if (x.status === 504 && expect.deadlineSet) return [];
  if (x.status === 501 && expect.unsupportedCompression && x.transport.startsWith("connect")) return [];
  return [`HTTP ${x.status}`];
}

/** Node refuses these before any handler runs (request line or headers too large): no body. */
const refusedByHttpParser = new Set([414, 431]);

/** The frames of a stream answer, decompressed (flag 0x01) with the encoding the answer names. */
function decodedFrames(x: Exchange, encodingHeader: string): Array<{ flags: number; data: Buffer }> {
  const encoding = x.header(encodingHeader);
  return framesOf(x.bytes).map(({ flags, data }) => {
    if ((flags & 0x01) === 0) return { flags, data };
    try {
      const plain = encoding === "br" ? brotliDecompressSync(data) : gunzipSync(data);
      return { flags: flags & ~0x01, data: plain };
    } catch {
      return { flags, data };
    }
  });
}

/**
 * A gRPC or gRPC-Web answer (the request said it was one): its status, from the headers of a
 * trailers-only answer or from the gRPC-Web trailer frame. gRPC trailers after a body are not
 * visible to fetch; nothing is judged then.
 */
function grpcProblems(x: Exchange): string[] {
  let status = x.header("grpc-status");
  if (status === null) {
    for (const frame of decodedFrames(x, "grpc-encoding")) {
      if ((frame.flags & 0x80) === 0) continue;
      status = /grpc-status:\s*(\d+)/i.exec(frame.data.toString("latin1"))?.[1] ?? null;
    }
  }
  if (status === null) return [];
  const name = codeByNumber.get(Number(status));
  return name !== undefined && forbidden.has(name) ? [`gRPC status ${name}`] : [];
}

/** A REST error answer's body, which must parse as JSON before its shape is checked. */
function restErrorBodyProblems(x: Exchange, expect: Expectations): string[] {
  const parsed = parseJson(x.text);
  return parsed.ok ? restErrorProblems(parsed.value, x.status, expect) : ["an error body that is not JSON"];
}

/** An error answer on a Connect path: a Connect error, a bare 405/415, or the REST app's 404. */
function connectHttpErrorProblems(x: Exchange, expect: Expectations): string[] {
  if (x.text === "" && (x.status === 405 || x.status === 415)) return [];
  const parsed = parseJson(x.text);
  if (!parsed.ok) return [`HTTP ${x.status} with a body that is not JSON`];
  const body = parsed.value;
  // Paths that are not procedures of the contract fall through to the REST app.
  if (isObject(body) && typeof body.code === "number") return restErrorProblems(body, x.status, expect);
  const problems = connectErrorProblems(body, expect);
  if (isObject(body) && typeof body.code === "string" && body.code in codes) {
    const expected = codes[body.code as CodeName].status;
    if (x.status !== expected) problems.push(`HTTP ${x.status} for code ${body.code}`);
  }
  return problems;
}

/** Everything wrong with an answer; empty when it is as it must be. */
export function problemsOf(x: Exchange, expect: Expectations): string[] {
  const problems = [...statusProblems(x, expect)];
  if (refusedByHttpParser.has(x.status) && x.text === "") return problems;
  if (x.header("x-request-id") === null) problems.push("no X-Request-Id");
  const type = x.header("content-type") ?? "";
  if (type.startsWith("application/grpc")) return [...problems, ...grpcProblems(x)];
  switch (x.transport) {
    case "connect":
    case "connect-get":
      if (x.status === 200) {
        if (type.startsWith("application/json")) {
          const parsed = parseJson(x.text);
          if (!parsed.ok || !isObject(parsed.value))
            problems.push("a success whose body is not a JSON object");
        } else if (!type.startsWith("application/proto")) problems.push(`a success of type ${type}`);
      } else problems.push(...connectHttpErrorProblems(x, expect));
      break;
    case "rest":
      if (x.httpMethod === "HEAD" || (x.status === 204 && x.text === "")) break;
      if (x.status === 200) {
        const parsed = parseJson(x.text);
        if (!parsed.ok || !isObject(parsed.value)) problems.push("a success whose body is not a JSON object");
      } else {
        problems.push(...restErrorBodyProblems(x, expect));
      }
      break;
    case "connect-stream":
      // Open, with nothing sent yet: connect-node sends the headers with the first message.
      if (x.status === 0 && x.bytes.length === 0 && x.serverReset === undefined) return [];
      if (x.serverReset !== undefined && x.serverReset !== http2.constants.NGHTTP2_CANCEL)
        problems.push(`the server reset the stream (HTTP/2 code ${x.serverReset})`);
      if (x.status !== 200) {
        problems.push(...connectHttpErrorProblems(x, expect));
        break;
      }
      if (!type.startsWith("application/connect+")) problems.push(`a stream of type ${type}`);
      for (const frame of decodedFrames(x, "connect-content-encoding")) {
        if ((frame.flags & 0b10) !== 0) {
          const end = parseJson(frame.data.toString("utf8"));
          if (!end.ok || !isObject(end.value))
            problems.push("an end-of-stream frame that is not a JSON object");
          else if (end.value.error !== undefined)
            problems.push(...connectErrorProblems(end.value.error, expect));
        } else if (type.startsWith("application/connect+json")) {
          const message = parseJson(frame.data.toString("utf8"));
          if (!message.ok || !isObject(message.value))
            problems.push("a message frame that is not a JSON object");
        }
      }
      if (x.ended && !framesOf(x.bytes).some((f) => (f.flags & 0b10) !== 0))
        problems.push("a stream that ended without an end-of-stream frame");
      break;
    case "rest-stream":
      if (x.httpMethod === "HEAD" || (x.status === 204 && x.text === "")) break;
      if (x.status !== 200) {
        problems.push(...restErrorBodyProblems(x, expect));
        break;
      }
      if (!type.startsWith("application/x-ndjson")) problems.push(`a stream of type ${type}`);
      for (const line of x.text.split("\n").slice(0, -1)) {
        const parsed = parseJson(line);
        if (!parsed.ok || !isObject(parsed.value)) problems.push("a line that is not a JSON object");
        else if (parsed.value.error !== undefined) {
          const error = parsed.value.error;
          const status =
            isObject(error) && typeof error.code === "number"
              ? codes[codeByNumber.get(error.code) ?? "unknown"].status
              : 0;
          problems.push(...restErrorProblems(error, status, expect));
        }
      }
      break;
  }
  return problems;
}

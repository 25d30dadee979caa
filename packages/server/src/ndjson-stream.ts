/**
 * Server-streaming RPCs over REST, as newline-delimited JSON (`application/x-ndjson`): one
 * response message per line, in the contract's canonical JSON. (The contract leaves the framing
 * to the transcoder; NDJSON reads with `curl -N` and a line splitter, and needs no event-stream
 * parser.)
 *
 * What is refused before the stream starts (credentials, access, validation, rate limit) is an
 * ordinary REST error with its HTTP status. The 200 and its headers go out as soon as the stream
 * is in effect, so a client knows from the headers alone that it will see every later event. A
 * stream that fails after it began ends with one last line, `{"error": <google.rpc.Status>}`
 * (messages never have an `error` key). A server shutting down ends it that way with
 * `unavailable`: subscribe again.
 *
 * @module
 */
import type { DescMessage, DescMethodServerStreaming, MessageShape } from "@bufbuild/protobuf";
import { PlatformError } from "@wap/core";
import { callContextOf, type EdgeRequest, type EdgeSettings, noteWorkspace } from "./edge.js";
import { errorStatusJson } from "./error-responses.js";
import { answerNoted } from "./errors.js";
import { writeResponse } from "./rest/index.js";

export interface NdjsonStreamOptions<I extends DescMessage, O extends DescMessage> {
  readonly edge: EdgeRequest;
  readonly settings: EdgeSettings;
  readonly method: DescMethodServerStreaming<I, O>;
  readonly request: MessageShape<I>;
  /** The client leaving, its deadline, the server shutting down. */
  readonly signal: AbortSignal;
  /** Runs once when the stream is over, however it ends. */
  readonly onEnd: () => void;
  /** The REST error answer, for refusals before the stream starts. */
  readonly fail: (error: unknown) => Response;
}

const encoder = new TextEncoder();

/** Answers a server-streaming RPC as NDJSON, or with an error before it starts. */
export async function ndjsonStream<I extends DescMessage, O extends DescMessage>(
  options: NdjsonStreamOptions<I, O>,
): Promise<Response> {
  const { edge, settings, method, signal } = options;
  let ended = false;
  const end = (code: EdgeRequest["code"]) => {
    if (ended) return;
    ended = true;
    edge.code ??= code;
    options.onEnd();
  };
  let iterator: AsyncIterator<MessageShape<O>>;
  let pending: Promise<IteratorResult<MessageShape<O>>> | undefined;
  try {
    noteWorkspace(edge, options.request);
    const ctx = callContextOf(edge, settings, method, signal);
    let onReady = () => {};
    const ready = new Promise<void>((resolve) => {
      onReady = () => {
        edge.streamSpan?.event("accepted");
        resolve();
      };
    });
    iterator = settings.platform.stream(method, ctx, options.request, { onReady })[Symbol.asyncIterator]();
    pending = iterator.next();
    // Whichever comes first: the stream in effect, or its first message, end or refusal.
    await Promise.race([ready, pending]);
  } catch (error) {
    end(undefined);
    return options.fail(error);
  }

  const line = (value: unknown) => encoder.encode(`${JSON.stringify(value)}\n`);
  // Once the client has gone, the stream is closed: nothing may be written to it any more.
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await (pending ?? iterator.next());
        pending = undefined;
        if (cancelled) return;
        if (!next.done) {
          controller.enqueue(encoder.encode(`${writeResponse(method, next.value)}\n`));
          return;
        }
        // Ended by a deadline or a shutdown: say so. A client that left hears nothing anyway.
        const reason: unknown = signal.aborted ? signal.reason : undefined;
        if (reason instanceof PlatformError && reason.code !== "canceled") throw reason;
        controller.close();
        end(signal.aborted ? "canceled" : "ok");
      } catch (error) {
        if (cancelled) return;
        const answer = answerNoted(edge, error, settings.logger);
        controller.enqueue(line({ error: errorStatusJson(answer) }));
        controller.close();
        end(answer.code);
      }
    },
    async cancel() {
      cancelled = true;
      end("canceled");
      await iterator.return?.();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": "application/x-ndjson",
      "Cache-Control": "no-store",
      // Proxies such as nginx would otherwise hold the lines back.
      "X-Accel-Buffering": "no",
    },
  });
}

/**
 * Streaming operations. Server-streaming ones are declared like unary ones (RPC, access, input
 * schema), checked by the same code before they run, but `run` yields messages until it is done
 * or the caller's signal fires. They write nothing, so they get no audit hook. Bidirectional ones
 * (the daemon's streams) are admitted the same way, then `run` reads the client's messages too.
 *
 * @module
 */
import type {
  DescMessage,
  DescMethodBiDiStreaming,
  DescMethodServerStreaming,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import type * as z from "zod";
import type { Access, OperationCall } from "../operations/operation.js";

/** Everything a streaming `run` receives; `ctx.signal` fires when the client goes away. */
export interface StreamingCall<In> extends Omit<OperationCall<In>, "audit" | "auditEvent"> {
  /**
   * Says that the stream is in effect (e.g. its subscription is live), before the first message,
   * which may be long in coming. Transports that can answer early (REST headers) do so then.
   */
  ready(): void;
}

/** A server-streaming operation of the platform. */
export interface StreamingOperation<
  I extends DescMessage = DescMessage,
  O extends DescMessage = DescMessage,
  In = unknown,
> {
  readonly method: DescMethodServerStreaming<I, O>;
  readonly access: Access;
  readonly input: z.ZodType<In, unknown>;
  run(call: StreamingCall<In>): AsyncIterable<MessageInitShape<O>>;
}

/** Declares a streaming operation; the input type of `run` follows from the schema. */
export function defineStreamingOperation<
  I extends DescMessage,
  O extends DescMessage,
  S extends z.ZodType,
>(operation: {
  readonly method: DescMethodServerStreaming<I, O>;
  readonly access: Access;
  readonly input: S;
  run(call: StreamingCall<z.output<S>>): AsyncIterable<MessageInitShape<O>>;
}): StreamingOperation<I, O, z.output<S>> {
  return operation as StreamingOperation<I, O, z.output<S>>;
}

/** Any streaming operation, whatever its message types. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every shape.
export type AnyStreamingOperation = StreamingOperation<any, any, any>;

/**
 * What a transport may learn of a bidirectional stream as it runs, for its trace: a significant
 * moment (`daemon.online`, `session.claimed`) or attributes learnt on the way (the session).
 */
export interface StreamObserver {
  event?(name: string): void;
  annotate?(attributes: Readonly<Record<string, string>>): void;
}

/** What the transport gives a bidirectional stream besides its messages. */
export interface BidiStreamOptions {
  readonly observer?: StreamObserver;
  /** The time left before the call's deadline (ms; zero or less once passed), when it has one. */
  readonly timeLeftMs?: () => number | undefined;
}

/**
 * Everything a bidirectional `run` receives: the admitted call, and the client's messages as
 * they come. `ctx.signal` fires when the client goes away.
 */
export interface BidiStreamingCall<Req>
  extends Omit<StreamingCall<unknown>, "ready" | "input">,
    BidiStreamOptions {
  readonly requests: AsyncIterable<Req>;
}

/**
 * A bidirectional stream: the daemon's control and session streams. Declared like every other
 * RPC and admitted by the same code (`Platform.bidiStream`), so the registry lists it with its
 * access; `run` reads the client's messages and yields the answers. What the streams live in
 * (the instance's open streams, its terminal relays) comes from `services` (daemons/stream-hosts.ts).
 */
export interface BidiStreamingOperation<
  I extends DescMessage = DescMessage,
  O extends DescMessage = DescMessage,
> {
  readonly method: DescMethodBiDiStreaming<I, O>;
  readonly access: Access;
  /** The input checked at admission: the stream's messages come later. */
  readonly input: z.ZodType<unknown, unknown>;
  run(call: BidiStreamingCall<MessageShape<I>>): AsyncIterable<MessageInitShape<O>>;
}

/** Any bidirectional stream, whatever its message types. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every shape.
export type AnyBidiStreamingOperation = BidiStreamingOperation<any, any>;

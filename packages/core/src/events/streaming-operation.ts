/**
 * Server-streaming operations: declared like unary ones (RPC, access, input schema), checked by
 * the same code before they run, but `run` yields messages until it is done or the caller's
 * signal fires. They write nothing, so they get no audit hook.
 *
 * @module
 */
import type {
  DescMessage,
  DescMethodBiDiStreaming,
  DescMethodServerStreaming,
  MessageInitShape,
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
 * A bidirectional stream the transport runs once the platform has admitted its caller: the
 * daemon's control and session streams, whose messages come from resources of the server instance
 * holding them (its open streams, its terminal relays). Declared like every other RPC, so that who
 * may open one is decided by the same code ({@link ../platform.ts} `openStream`), and the registry
 * lists it with its access.
 */
export interface BidiStreamingOperation<
  I extends DescMessage = DescMessage,
  O extends DescMessage = DescMessage,
> {
  readonly method: DescMethodBiDiStreaming<I, O>;
  readonly access: Access;
  /** The input checked at admission: the stream's messages come later. */
  readonly input: z.ZodType<unknown, unknown>;
}

/** Any bidirectional stream, whatever its message types. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds operations of every shape.
export type AnyBidiStreamingOperation = BidiStreamingOperation<any, any>;

/**
 * The Connect routes: every method of the contract's services, for the Connect (JSON and binary), gRPC
 * and gRPC-Web protocols. Unary methods run through the edge into `platform.invoke` (which
 * answers `unimplemented` for RPCs that have no operation yet); server-streaming methods the
 * platform implements run through the edge into `platform.stream`; the other streaming methods
 * answer `unimplemented` after the edge has had its say. StreamCLILogin runs core's CLI login
 * stream with the device headers it reads; DaemonControlService.Connect is the daemon's control
 * stream (daemons/control-stream.ts), DaemonSessionService.Session its terminal stream
 * (daemons/session-stream.ts).
 *
 * @module
 */
import type {
  DescMessage,
  DescMethodServerStreaming,
  DescMethodUnary,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  AuthService,
  DaemonControlService,
  DaemonSessionService,
  platformServices,
  type StreamCLILoginRequest,
  type StreamCLILoginResponseSchema,
} from "@wap/api";
import { cliLoginHeaders, procedureOf } from "@wap/core/internal";
import { answer, requireEdge, shuttingDown } from "./connect-context.js";
import { controlStreamHandler } from "./daemons/control-stream.js";
import { sessionStreamHandler } from "./daemons/session-stream.js";
import { callContextOf, callPlatform, type EdgeSettings, noteWorkspace, untilClosing } from "./edge.js";
import { streamAccepted } from "./stream-headers.js";

/** Registers every method of the contract on `router`. */
export function registerConnectRoutes(router: ConnectRouter, settings: EdgeSettings): void {
  for (const service of platformServices) {
    for (const method of service.methods) {
      // DescMethod does not narrow on methodKind; the casts restate what the branch checked.
      if (method.methodKind === "unary") {
        const unary = method as DescMethodUnary;
        router.rpc(unary, unaryHandler(unary, settings));
      } else if (method === AuthService.method.streamCLILogin) {
        router.rpc(AuthService.method.streamCLILogin, cliLoginHandler(settings));
      } else if (method === DaemonControlService.method.connect) {
        router.rpc(DaemonControlService.method.connect, controlStreamHandler(settings));
      } else if (method === DaemonSessionService.method.session) {
        router.rpc(DaemonSessionService.method.session, sessionStreamHandler(settings));
      } else if (
        method.methodKind === "server_streaming" &&
        settings.platform.streams.has(procedureOf(method))
      ) {
        const streaming = method as DescMethodServerStreaming;
        router.rpc(streaming, serverStreamingHandler(streaming, settings));
      } else {
        // Every RPC of the contract is served: one without its handler is a build fault, found
        // by the first server any test starts, never an answer a client gets.
        throw new Error(`${procedureOf(method)} is in the contract but has no handler in this server`);
      }
    }
  }
}

function unaryHandler<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  settings: EdgeSettings,
) {
  return async (request: MessageShape<I>, context: HandlerContext): Promise<MessageShape<O>> => {
    const edge = requireEdge(context);
    try {
      const { response, setCookies } = await callPlatform(edge, settings, method, request, context.signal);
      for (const cookie of setCookies ?? []) context.responseHeader.append("Set-Cookie", cookie);
      edge.code = "ok";
      return response;
    } catch (error) {
      throw answer(edge, settings, error);
    }
  };
}

function serverStreamingHandler<I extends DescMessage, O extends DescMessage>(
  method: DescMethodServerStreaming<I, O>,
  settings: EdgeSettings,
) {
  return async function* (
    request: MessageShape<I>,
    context: HandlerContext,
  ): AsyncGenerator<MessageShape<O>> {
    const edge = requireEdge(context);
    edge.rpc = procedureOf(method);
    noteWorkspace(edge, request);
    // The client leaving, its deadline, or this server starting to shut down.
    const signal = untilClosing(settings, context.signal);
    const onReady = () => {
      edge.streamSpan?.event("accepted");
      streamAccepted(context);
    };
    try {
      const ctx = callContextOf(edge, settings, method, signal);
      yield* settings.platform.stream(method, ctx, request, { onReady });
      if (settings.closing?.aborted && !context.signal.aborted) throw shuttingDown();
      throwIfDeadlineExceeded(context);
      edge.code = context.signal.aborted ? "canceled" : "ok";
    } catch (error) {
      throw answer(edge, settings, deadlineOf(context) ?? error);
    }
  };
}

/**
 * AuthService.StreamCLILogin (docs/agent-protocol.md): the verification URL and user code at once,
 * then the user once a signed-in user approves the login with VerifyCLILogin, on this instance or
 * another. The operation reads the device id, its name, OS and client version from the
 * `Platform-Client-*` headers passed along. The stream lives as long as the pending login
 * (`cliLoginTtlSeconds`) and ends quietly when the client leaves.
 */
function cliLoginHandler(settings: EdgeSettings) {
  const method = AuthService.method.streamCLILogin;
  return async function* (
    request: StreamCLILoginRequest,
    context: HandlerContext,
  ): AsyncGenerator<MessageInitShape<typeof StreamCLILoginResponseSchema>> {
    const edge = requireEdge(context);
    edge.rpc = procedureOf(method);
    const signal = untilClosing(settings, context.signal);
    try {
      const ctx = callContextOf(edge, settings, method, signal, clientHeaders(context));
      yield* settings.platform.stream(method, ctx, request);
      edge.code = "ok";
    } catch (error) {
      // Nobody is left to answer; the pending login is already gone.
      if (context.signal.aborted && deadlineOf(context) === undefined) {
        edge.code = "canceled";
        return;
      }
      throw answer(
        edge,
        settings,
        deadlineOf(context) ?? (settings.closing?.aborted ? shuttingDown() : error),
      );
    }
  };
}

/** The `Platform-Client-*` headers StreamCLILogin reads, those the request carries. */
function clientHeaders(context: HandlerContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of cliLoginHeaders) {
    const value = context.requestHeader.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

/** The error a call's deadline ended it with, or undefined when it did not end by its deadline. */
function deadlineOf(context: HandlerContext): ConnectError | undefined {
  const reason: unknown = context.signal.aborted ? context.signal.reason : undefined;
  return reason instanceof ConnectError && reason.code === Code.DeadlineExceeded ? reason : undefined;
}

/**
 * A stream that ended because its deadline passed did not succeed: it ends with
 * `deadline_exceeded` on every protocol (the client may already have given up; one that waits
 * hears why).
 */
function throwIfDeadlineExceeded(context: HandlerContext): void {
  const deadline = deadlineOf(context);
  if (deadline) throw deadline;
}

/**
 * A web app's use of the grpc-web JavaScript client in its default (text) mode, bundled for the
 * browser by grpc-web.browser.test.ts: messages are the contract's own, encoded by protobuf-es.
 */
import { create, type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  LoginRequestSchema,
  LoginResponseSchema,
  SubscribeWorkspaceEventsRequestSchema,
  SubscribeWorkspaceEventsResponseSchema,
} from "@wap/api";
import { GrpcWebClientBase, MethodDescriptor, MethodType, type RpcError } from "grpc-web";

/** grpc-web only checks that these are constructors. */
class Message {}

function method<I extends DescMessage, O extends DescMessage>(
  path: string,
  kind: string,
  input: I,
  output: O,
): MethodDescriptor<MessageShape<I>, MessageShape<O>> {
  return new MethodDescriptor(
    path,
    kind,
    Message as never,
    Message as never,
    (request: MessageShape<I>) => toBinary(input, request),
    (bytes: Uint8Array) => fromBinary(output, bytes),
  );
}

const login = method(
  "/platform.v1.AuthService/Login",
  MethodType.UNARY,
  LoginRequestSchema,
  LoginResponseSchema,
);
const subscribe = method(
  "/platform.v1.WorkspaceService/SubscribeWorkspaceEvents",
  MethodType.SERVER_STREAMING,
  SubscribeWorkspaceEventsRequestSchema,
  SubscribeWorkspaceEventsResponseSchema,
);

/** The default options: text mode. */
const client = new GrpcWebClientBase({});

type Outcome<T> = { ok: true; value: T } | { ok: false; code: number; message: string };

const failure = (error: RpcError): Outcome<never> => ({
  ok: false,
  code: error.code,
  message: error.message,
});

/** What the stream has delivered so far, read by the test. */
const stream = { events: [] as Array<{ type: string; workspaceId: string }>, subscribed: false, ended: "" };

export type GrpcWebApi = typeof api;

const api = {
  login(server: string, email: string, password: string): Promise<Outcome<{ accessToken: string }>> {
    return new Promise((resolve) => {
      client.rpcCall(
        `${server}${login.getName()}`,
        create(LoginRequestSchema, { email, password }),
        {},
        login,
        (error, response) =>
          resolve(error ? failure(error) : { ok: true, value: { accessToken: response.accessToken ?? "" } }),
      );
    });
  },
  subscribe(server: string, token: string, workspaceId: string): void {
    const call = client.serverStreaming(
      `${server}${subscribe.getName()}`,
      create(SubscribeWorkspaceEventsRequestSchema, { workspaceId }),
      { authorization: `Bearer ${token}` },
      subscribe,
    );
    call.on("metadata", () => {
      stream.subscribed = true;
    });
    call.on("data", (event) =>
      stream.events.push({ type: event.type ?? "", workspaceId: event.workspaceId ?? "" }),
    );
    call.on("error", (error) => {
      stream.ended = `error ${error.code}: ${error.message}`;
    });
    call.on("end", () => {
      stream.ended ||= "end";
    });
    api.cancel = () => call.cancel();
  },
  cancel: () => {},
  stream,
};

(globalThis as { grpcWeb?: typeof api }).grpcWeb = api;

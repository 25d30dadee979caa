/**
 * The daemon's own streams (docs/agent-protocol.md): DaemonControlService.Connect, its control
 * stream, and DaemonSessionService.Session, its side of a web terminal. Only an enrolled daemon
 * signing the request may open them; the platform admits the caller and runs them
 * (`Platform.bidiStream`), over the resources of the server instance holding them
 * (daemons/stream-hosts.ts). Transports only carry their messages.
 *
 * @module
 */
import {
  type ConnectRequestSchema,
  type ConnectResponseSchema,
  DaemonControlService,
  DaemonSessionService,
  type SessionRequestSchema,
  type SessionResponseSchema,
} from "@wap/api";
import * as z from "zod";
import type { BidiStreamingOperation } from "../events/streaming-operation.js";
import { runControlStream } from "./control-stream.js";
import { runSessionStream } from "./session-stream.js";

// Nothing to validate at admission: the stream's messages are read as they come.
const noInput = z.object({});

export const daemonControlStream: BidiStreamingOperation<
  typeof ConnectRequestSchema,
  typeof ConnectResponseSchema
> = {
  method: DaemonControlService.method.connect,
  access: { kind: "signed_daemon", stream: "control stream" },
  input: noInput,
  run: runControlStream,
};

export const daemonSessionStream: BidiStreamingOperation<
  typeof SessionRequestSchema,
  typeof SessionResponseSchema
> = {
  method: DaemonSessionService.method.session,
  access: { kind: "signed_daemon", stream: "session stream" },
  input: noInput,
  run: runSessionStream,
};

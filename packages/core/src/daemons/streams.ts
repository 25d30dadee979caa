/**
 * The daemon's own streams (docs/agent-protocol.md): DaemonControlService.Connect, its control
 * stream, and DaemonSessionService.Session, its side of a web terminal. Only an enrolled daemon
 * signing the request may open them; the server instance holding them runs them once the
 * platform has admitted the daemon (`Platform.openStream`).
 *
 * @module
 */
import { DaemonControlService, DaemonSessionService } from "@wap/api";
import * as z from "zod";
import type { AnyBidiStreamingOperation } from "../events/streaming-operation.js";

// Nothing to validate at admission: the stream's messages are read as they come.
const noInput = z.object({});

export const daemonControlStream: AnyBidiStreamingOperation = {
  method: DaemonControlService.method.connect,
  access: { kind: "signed_daemon", stream: "control stream" },
  input: noInput,
};

export const daemonSessionStream: AnyBidiStreamingOperation = {
  method: DaemonSessionService.method.session,
  access: { kind: "signed_daemon", stream: "session stream" },
  input: noInput,
};

/** Every bidirectional stream this build serves. */
export const bidiStreamingOperations = [daemonControlStream, daemonSessionStream];

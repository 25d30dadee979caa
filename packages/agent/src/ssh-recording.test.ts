import type { DaemonClient } from "@wap/client";
import { describe, expect, it } from "vitest";
import { LoginRecording } from "./ssh-recording.js";

/**
 * The server's side of AppendSSHRecording as the agent sees it: appends by offset, held until
 * the test lets each one answer, so that what happens while one is in flight is in the test's hands.
 */
function heldServer() {
  let file = Buffer.alloc(0);
  let complete = false;
  const waiting: (() => void)[] = [];
  let arrived: (() => void) | undefined;
  const client = {
    daemons: {
      async appendSSHRecording(req: { offset: bigint; data: Uint8Array; final?: boolean }) {
        await new Promise<void>((answer) => {
          waiting.push(answer);
          arrived?.();
        });
        const fresh = Buffer.from(req.data).subarray(file.byteLength - Number(req.offset));
        file = Buffer.concat([file, fresh]);
        if (req.final) complete = true;
        return { size: BigInt(file.byteLength), truncated: false };
      },
    },
  } as unknown as DaemonClient;
  return {
    client,
    /** Resolves once an append waits for its answer. */
    arrival: () =>
      waiting.length > 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            arrived = resolve;
          }),
    answer: () => waiting.shift()?.(),
    text: () => file.toString("utf8"),
    complete: () => complete,
  };
}

describe("the recording of an SSH login", () => {
  it("keeps what is written while an append is in flight: the last output and the exit marker reach the server", async () => {
    const server = heldServer();
    const recording = new LoginRecording({
      sessionId: "4a5c2a56-0d8a-4d0e-9a43-2b3f5c6d7e8f",
      client: server.client,
      log: () => {},
      kind: "shell",
      command: "",
      tty: true,
      size: { cols: 80, rows: 24 },
      requireRecording: false,
      onCannotStore: () => {},
    });
    recording.output(Buffer.from("first\r\n"));
    // The periodic upload of the header and "first" is sent and waits for its answer...
    await server.arrival();
    // ...while the login writes its last output and ends.
    recording.output(Buffer.from("hello-42\r\n"));
    const finished = recording.finish(5);
    server.answer();
    let done = false;
    void finished.then(() => {
      done = true;
    });
    while (!done) {
      await Promise.race([server.arrival(), finished]);
      server.answer();
    }
    expect(server.complete()).toBe(true);
    const [header, ...events] = server
      .text()
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(header).toMatchObject({ version: 2, width: 80, height: 24 });
    expect(events.map((e: unknown[]) => e.slice(1))).toEqual([
      ["o", "first\r\n"],
      ["o", "hello-42\r\n"],
      ["m", "exit status 5"],
    ]);
  });
});

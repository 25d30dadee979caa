/**
 * The daemon's session stream as the platform runs it (`Platform.bidiStream`), over an
 * in-memory relay host standing in for the server instance's terminal relays: the `ready`
 * handshake, the claim, what flows each way, and how the stream ends.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { DaemonSessionService, type SessionRequest, SessionRequestSchema } from "@wap/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCallContext, type DaemonCaller } from "../src/context.js";
import { daemonSideEndReasons } from "../src/daemon-streams/session-stream.js";
import type { SessionStreamMessage, TerminalRelay, TerminalRelayHost } from "../src/daemons/stream-hosts.js";
import type { BidiStreamOptions } from "../src/events/streaming-operation.js";
import { endSession, sessionRelayOf } from "../src/sessions/lifecycle.js";
import type { DaemonSessionRecord } from "../src/storage/daemon-sessions.js";
import type { Owner } from "./support/access.js";
import { createdSession, type TestDaemon, terminalReadyDaemon } from "./support/daemons.js";
import { messageQueue, whenOpened } from "./support/message-queue.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const method = DaemonSessionService.method.session;
const thisInstance = { instanceId: "instance-a", url: "http://10.0.0.5:8080" };
const resize: SessionStreamMessage = { msg: { case: "resize", value: { width: 80, height: 24 } } };

/** A session's relay, in memory: what it sends the daemon, what it heard, and why it ended. */
class MemoryRelay implements TerminalRelay {
  readonly output_: Uint8Array[] = [];
  readonly #outbox: SessionStreamMessage[] = [];
  #wake: (() => void) | undefined;
  #endedWith: ((reason: string) => void) | undefined;
  readonly ended = new Promise<string>((resolve) => (this.#endedWith = resolve));
  #done = false;

  constructor(readonly session: DaemonSessionRecord) {}

  async start() {
    this.#send(resize);
  }
  async nextForDaemon() {
    for (;;) {
      const message = this.#outbox.shift();
      if (message !== undefined) return message;
      if (this.#done) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
  async output(bytes: Uint8Array) {
    this.output_.push(bytes);
  }
  async daemonEnded(reason: string) {
    this.#end(reason);
  }
  async closedElsewhere(reason: string) {
    this.#send({ msg: { case: "close", value: { reason } } });
    this.#end(reason);
  }
  async serverStopping() {
    this.#end("the server is shutting down");
  }
  async whenEnded() {
    await this.ended;
  }
  #send(message: SessionStreamMessage) {
    if (this.#done) return;
    this.#outbox.push(message);
    this.#wake?.();
  }
  #end(reason: string) {
    if (this.#done) return;
    this.#done = true;
    this.#endedWith?.(reason);
    this.#wake?.();
  }
}

function memoryRelays() {
  const closing = new AbortController();
  let opened: (relay: MemoryRelay) => void = () => undefined;
  const firstOpened = new Promise<MemoryRelay>((resolve) => (opened = resolve));
  const host: TerminalRelayHost = {
    relayRecord: () => thisInstance,
    open(session) {
      const relay = new MemoryRelay(session);
      opened(relay);
      return relay;
    },
    closing: closing.signal,
  };
  return { host, closing, firstOpened };
}

/** The daemon's side of the stream: messages sent as the test says. */
function daemonMessages() {
  const queue = messageQueue<SessionRequest>();
  return {
    messages: queue.messages,
    send: (message: MessageInitShape<typeof SessionRequestSchema>["msg"]) =>
      queue.send(create(SessionRequestSchema, { msg: message })),
    end: queue.end,
  };
}

let t: TestPlatform;
let relays: ReturnType<typeof memoryRelays>;
let ada: Owner;
let d: TestDaemon;
let self: DaemonCaller;

async function setUp(options: { host?: boolean } = {}) {
  relays = memoryRelays();
  t = await createTestPlatform(options.host === false ? {} : { terminalRelays: relays.host });
  ada = await t.owner();
  ({ daemon: d, self } = await terminalReadyDaemon(t, ada, "session-host"));
}
afterEach(() => t.platform.close());

const created = () => createdSession(t, ada, d);

/** Opens the stream as the daemon. */
function openStream(options: BidiStreamOptions = {}) {
  const daemon = daemonMessages();
  const gone = new AbortController();
  const events: string[] = [];
  const answers = whenOpened(
    t.platform.bidiStream(method, createCallContext(self, { signal: gone.signal }), daemon.messages, {
      observer: { event: (name) => void events.push(name) },
      ...options,
    }),
  );
  const read = async () => {
    const next = await answers.next();
    return next.done ? "ended" : next.value;
  };
  const ready = (sessionId: string) =>
    daemon.send({ case: "ready", value: { sessionId, username: "ubuntu", userId: ada.caller.userId } });
  return { answers, read, daemon, ready, gone, events };
}

describe("the daemon's session stream, run by the platform", () => {
  beforeEach(() => setUp());

  it("claims the session named by `ready` on this instance and relays both ways until the shell exits", async () => {
    const id = await created();
    const stream = openStream();
    stream.ready(id);
    expect(await stream.read()).toEqual(resize);
    const relay = await relays.firstOpened;
    expect(relay.session.id).toBe(id);
    expect(stream.events).toEqual(["session.claimed"]);
    expect(await sessionRelayOf(t.platform.services, ada.workspaceId, id)).toEqual({
      kind: "open",
      relay: thisInstance,
    });
    stream.daemon.send({ case: "stdout", value: new TextEncoder().encode("ubuntu\r\n") });
    stream.daemon.send({ case: "exited", value: { exitCode: 0, errorMessage: "" } });
    expect(await relay.ended).toBe("the session ended on the daemon (exit code 0)");
    expect(new TextDecoder().decode(relay.output_[0])).toBe("ubuntu\r\n");
    expect(await stream.read()).toBe("ended");
  });

  it("tells the daemon `close` when the session is closed elsewhere", async () => {
    const id = await created();
    const stream = openStream();
    stream.ready(id);
    await stream.read();
    await endSession(t.platform.services, ada.workspaceId, id, "closed by an admin");
    expect(await stream.read()).toEqual({ msg: { case: "close", value: { reason: "closed by an admin" } } });
    expect(await stream.read()).toBe("ended");
  });

  it("ends the session when the daemon half-closes its side", async () => {
    const id = await created();
    const stream = openStream();
    stream.ready(id);
    await stream.read();
    stream.daemon.end();
    expect(await (await relays.firstOpened).ended).toBe(daemonSideEndReasons.daemonClosed);
    expect(await stream.read()).toBe("ended");
  });

  it("refuses a first message other than `ready`, and a stream that ends before it", async () => {
    const wrong = openStream();
    wrong.daemon.send({ case: "stdout", value: new Uint8Array([1]) });
    expect((await expectCode(wrong.read(), "invalid_argument")).reason).toBe("SESSION_READY_MISSING");
    const silent = openStream();
    silent.daemon.end();
    expect((await expectCode(silent.read(), "invalid_argument")).reason).toBe("SESSION_READY_MISSING");
  });

  it("ends a stream still waiting for `ready` with unavailable SHUTTING_DOWN when the server stops", async () => {
    const stream = openStream();
    const ended = stream.read();
    relays.closing.abort();
    expect((await expectCode(ended, "unavailable")).reason).toBe("SHUTTING_DOWN");
  });

  it("answers deadline_exceeded SESSION_DEADLINE once the deadline has passed", async () => {
    const id = await created();
    let left = 1_000;
    const stream = openStream({ timeLeftMs: () => left });
    stream.ready(id);
    await stream.read();
    left = 0;
    const ended = stream.read();
    stream.gone.abort();
    expect((await expectCode(ended, "deadline_exceeded")).reason).toBe("SESSION_DEADLINE");
    expect(await (await relays.firstOpened).ended).toBe(daemonSideEndReasons.deadline);
  });
});

describe("a platform relaying no terminal sessions", () => {
  beforeEach(() => setUp({ host: false }));

  it("answers unimplemented", async () => {
    const error = await expectCode(openStream().read(), "unimplemented");
    expect(error.message).toBe("this server does not relay terminal sessions");
  });
});

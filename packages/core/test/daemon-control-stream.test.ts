/**
 * The daemon's control stream as the platform runs it (`Platform.bidiStream`), over an
 * in-memory host standing in for the server instance: the greeting, heartbeats answered, the
 * daemon's topic relayed, and every way the stream ends, with the daemon marked offline after.
 */

import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type ConnectRequest,
  ConnectRequestSchema,
  DaemonControlService,
  DaemonService,
  DaemonStatus,
  Notification_EventType,
} from "@wap/api";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCallContext, type DaemonCaller } from "../src/context.js";
import { maxQueuedControlMessages } from "../src/daemon-streams/control-stream.js";
import type { ConnectResponseInit } from "../src/daemons/control.js";
import { notify, type TopicEvent } from "../src/daemons/events.js";
import type { DaemonStreamHost, HeldControlStream } from "../src/daemons/stream-hosts.js";
import type { EventPayload } from "../src/events/event-bus.js";
import type { Owner } from "./support/access.js";
import { enrolledDaemon, type TestDaemon } from "./support/daemons.js";
import { messageQueue, whenOpened } from "./support/message-queue.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const method = DaemonControlService.method.connect;
const heartbeatAck = { msg: { case: "heartbeatAck", value: {} } };

/** The server instance's part, in memory: its streams, and the offline writes that failed. */
function memoryHost(keepaliveMs = 3_600_000) {
  const open = new Set<HeldControlStream>();
  const offlineFailures: unknown[] = [];
  let next = 0;
  const host: DaemonStreamHost = {
    keepaliveMs,
    servicesFor: (services) => services,
    track(daemonId, requestId) {
      let chain: Promise<unknown> = Promise.resolve();
      const stream: HeldControlStream = {
        daemonId,
        requestId,
        holder: `memory/${++next}`,
        abort: new AbortController(),
        opened: false,
        write(fn) {
          const result = chain.then(fn, fn);
          chain = result.catch(() => undefined);
          return result;
        },
      };
      open.add(stream);
      return stream;
    },
    untrack: (stream) => void open.delete(stream),
    offlineFailed: (_stream, error) => void offlineFailures.push(error),
  };
  return { host, open, offlineFailures };
}

/** The client's side of the stream: messages sent as the test says. */
function clientMessages() {
  const queue = messageQueue<ConnectRequest>();
  return {
    messages: queue.messages,
    send: (message: MessageInitShape<typeof ConnectRequestSchema>["msg"]) =>
      queue.send(create(ConnectRequestSchema, { msg: message })),
    sendRaw: (message: ConnectRequest) => queue.send(message),
    fail: queue.fail,
  };
}

let t: TestPlatform;
let memory: ReturnType<typeof memoryHost>;
let ada: Owner;
let d: TestDaemon;
let self: DaemonCaller;

async function setUp(options: { keepaliveMs?: number; host?: boolean } = {}) {
  memory = memoryHost(options.keepaliveMs);
  t = await createTestPlatform(options.host === false ? {} : { daemonStreams: memory.host });
  ada = await t.owner();
  d = await enrolledDaemon(t, ada, "control-host");
  self = { kind: "daemon", daemonId: d.id, workspaceId: ada.workspaceId };
}
afterEach(() => t.platform.close());

/** Opens the stream as the daemon; `online` settles once it is marked online and subscribed. */
function openStream(client = clientMessages(), platform = t.platform) {
  const gone = new AbortController();
  let online: () => void = () => undefined;
  const isOnline = new Promise<void>((resolve) => (online = resolve));
  const events: string[] = [];
  const answers = whenOpened(
    platform.bidiStream(method, createCallContext(self, { signal: gone.signal }), client.messages, {
      observer: {
        event(name) {
          events.push(name);
          if (name === "daemon.online") online();
        },
      },
    }),
  );
  const read = async (): Promise<ConnectResponseInit> => {
    const next = await answers.next();
    if (next.done) throw new Error("the stream ended");
    return next.value;
  };
  return { answers, read, client, gone, online: isOnline, events };
}

const onlineHolder = () => t.storage.daemons.onlineHolder(d.id);
const publish = ({ topic, payload }: TopicEvent) =>
  t.platform.services.events.publish(topic, payload as unknown as EventPayload);
const notification = (kind: keyof typeof Notification_EventType, status?: DaemonStatus) => ({
  msg: {
    case: "notification",
    value: {
      eventType: Notification_EventType[kind],
      daemonId: d.id,
      ...(status !== undefined && { status }),
    },
  },
});

describe("the daemon's control stream, run by the platform", () => {
  beforeEach(() => setUp());

  it("sends a HeartbeatAck at once, marks the daemon online, and answers its heartbeats", async () => {
    const stream = openStream();
    expect(await stream.read()).toEqual(heartbeatAck);
    const next = stream.read();
    await stream.online;
    expect(await onlineHolder()).toBe([...memory.open][0]!.holder);
    stream.client.send({ case: "heartbeat", value: {} });
    expect(await next).toEqual(heartbeatAck);
    stream.gone.abort();
    await stream.answers.return(undefined);
  });

  it("keeps the stream through a message with no member it knows (an old client's retired `sync`, field 2)", async () => {
    const stream = openStream();
    expect(await stream.read()).toEqual(heartbeatAck);
    const next = stream.read();
    await stream.online;
    // Field 2 (a message holding one empty string) is unknown to ConnectRequest now.
    const old = fromBinary(ConnectRequestSchema, Uint8Array.from([0x12, 0x02, 0x0a, 0x00]));
    expect(old.msg.case).toBeUndefined();
    stream.client.sendRaw(old);
    stream.client.send({ case: "heartbeat", value: {} });
    // The stream goes on: the heartbeat after it is answered.
    expect(await next).toEqual(heartbeatAck);
    stream.gone.abort();
    await stream.answers.return(undefined);
  });

  it("greets a rejected daemon with STATUS REJECTED, then relays its topic", async () => {
    // Straight to storage: the RPC would also publish the change, racing the stream's subscription.
    await t.storage.daemons.update(ada.workspaceId, d.id, { status: "rejected" }, t.clock.now());
    const stream = openStream();
    expect(await stream.read()).toEqual(heartbeatAck);
    expect(await stream.read()).toEqual(notification("STATUS", DaemonStatus.REJECTED));
    await stream.online;
    await publish(notify(d.id, "SYNC_REQUEST"));
    expect(await stream.read()).toEqual(notification("SYNC_REQUEST"));
    stream.gone.abort();
    await stream.answers.return(undefined);
  });

  it("ends with unauthenticated DAEMON_DELETED when the daemon is deleted, and marks it offline", async () => {
    const stream = openStream();
    await stream.read();
    const ended = stream.read();
    await stream.online;
    await t.call(ada.caller, DaemonService.method.deleteDaemon, { workspaceId: ada.workspaceId, id: d.id });
    const error = await expectCode(ended, "unauthenticated");
    expect(error.reason).toBe("DAEMON_DELETED");
    expect(stream.events).toContain("daemon.deleted");
    expect(memory.open.size).toBe(0);
  });

  it(`ends with resource_exhausted CONTROL_STREAM_BACKLOG beyond ${maxQueuedControlMessages} unread messages`, async () => {
    const stream = openStream();
    await stream.read();
    // Reading on: the stream comes online, but nothing it queues is taken yet.
    const first = stream.read();
    await stream.online;
    // One may be taken by the read under way; the rest overflow the queue.
    for (let i = 0; i < maxQueuedControlMessages + 2; i++) await publish(notify(d.id, "SYNC_REQUEST"));
    await first;
    let delivered = 1;
    const error = await expectCode(
      (async () => {
        for (;;) {
          await stream.read();
          delivered++;
        }
      })(),
      "resource_exhausted",
    );
    expect(error.reason).toBe("CONTROL_STREAM_BACKLOG");
    expect(delivered).toBeLessThanOrEqual(maxQueuedControlMessages + 1);
    expect(await onlineHolder()).toBeNull();
  });

  it("keeps every message a slow daemon has not read up to the bound, and ends the stream past it", async () => {
    const max = maxQueuedControlMessages;
    const unread = fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: max - 4, max: max + 4 }));
    await fc.assert(
      fc.asyncProperty(unread, async (n) => {
        const stream = openStream();
        await stream.read();
        // One read under way takes the first message; the n after it wait unread.
        const first = stream.read();
        await stream.online;
        for (let i = 0; i <= n; i++) await publish(notify(d.id, "SYNC_REQUEST"));
        expect(await first).toEqual(notification("SYNC_REQUEST"));
        let delivered = 0;
        const ended = await (async () => {
          try {
            for (; delivered < n; delivered++)
              expect(await stream.read()).toEqual(notification("SYNC_REQUEST"));
            return undefined;
          } catch (error) {
            return error;
          }
        })();
        if (n <= max) {
          // Nothing lost, in order, and the stream still answers.
          expect(ended).toBeUndefined();
          stream.client.send({ case: "heartbeat", value: {} });
          expect(await stream.read()).toEqual(heartbeatAck);
          stream.gone.abort();
          await stream.answers.return(undefined);
        } else {
          // What was queued still goes out, then the stream ends and the daemon reconnects.
          expect(delivered).toBe(max);
          expect(ended).toMatchObject({ code: "resource_exhausted", reason: "CONTROL_STREAM_BACKLOG" });
        }
        expect(memory.open.size).toBe(0);
      }),
      { numRuns: 20 },
    );
  });

  it("marks the daemon offline when the client goes away", async () => {
    const stream = openStream();
    await stream.read();
    const ended = stream.answers.next();
    await stream.online;
    expect(await onlineHolder()).not.toBeNull();
    stream.gone.abort();
    expect((await ended).done).toBe(true);
    expect(await onlineHolder()).toBeNull();
    expect(memory.open.size).toBe(0);
    expect(memory.offlineFailures).toEqual([]);
  });

  it("ends with why the client's messages could not be read", async () => {
    const stream = openStream();
    await stream.read();
    const ended = stream.read();
    await stream.online;
    const broken = new Error("the request stream broke");
    stream.client.fail(broken);
    await expect(ended).rejects.toBe(broken);
    expect(await onlineHolder()).toBeNull();
  });

  it("ends with unavailable SHUTTING_DOWN when the instance ends it", async () => {
    const stream = openStream();
    await stream.read();
    const ended = stream.read();
    await stream.online;
    for (const held of memory.open) (held.abort as AbortController).abort();
    const error = await expectCode(ended, "unavailable");
    expect(error.reason).toBe("SHUTTING_DOWN");
    expect(await onlineHolder()).toBeNull();
  });
});

describe("an idle control stream", () => {
  beforeEach(() => setUp({ keepaliveMs: 10 }));

  it("gets an unsolicited HeartbeatAck every keepalive interval", async () => {
    const stream = openStream();
    expect(await stream.read()).toEqual(heartbeatAck);
    // Nothing else is sent on this stream: the next message can only be the keepalive.
    expect(await stream.read()).toEqual(heartbeatAck);
    stream.gone.abort();
    await stream.answers.return(undefined);
  });
});

describe("a platform holding no control streams", () => {
  beforeEach(() => setUp({ host: false }));

  it("answers unimplemented", async () => {
    const error = await expectCode(openStream().read(), "unimplemented");
    expect(error.message).toBe("this server does not hold daemon control streams");
  });

  it("runs them once an instance gives it its host (withStreamHosts)", async () => {
    const hosted = t.platform.withStreamHosts({ daemonStreams: memory.host });
    const stream = openStream(clientMessages(), hosted);
    expect(await stream.read()).toEqual(heartbeatAck);
    const ended = stream.answers.next();
    await stream.online;
    expect(await onlineHolder()).toBe([...memory.open][0]!.holder);
    stream.gone.abort();
    expect((await ended).done).toBe(true);
    expect(await onlineHolder()).toBeNull();
  });
});

/**
 * Session recording: the recorder the relay feeds (asciicast v2 in stored chunks, streaming
 * UTF-8, size limit, bounded memory) and RecordingService (list, stream, delete), with its
 * permissions, tenant isolation and validation bounds.
 */
import { create } from "@bufbuild/protobuf";
import { type Recording, RecordingService } from "@wap/api";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Caller, createCallContext } from "../src/context.js";
import type { PlatformError } from "../src/errors.js";
import {
  maxBacklogBytes,
  recordingChunkBytes,
  type SessionRecording,
  startSessionRecording,
} from "../src/recordings/recorder.js";
import type { DaemonSessionRecord } from "../src/storage/daemon-sessions.js";
import type { Storage } from "../src/storage/storage.js";
import { memberWithRole, type Owner, serviceAccountCaller } from "./support/access.js";
import { ofLength, violatedFieldsOf } from "./support/bounds.js";
import { insertAcceptedDaemon } from "./support/daemons.js";
import { createTestPlatform, expectCode, type TestPlatform } from "./support.js";

const R = RecordingService.method;
const uuid = () => crypto.randomUUID();
const utf8 = new TextEncoder();

let t: TestPlatform;
let ada: Owner;

async function platform(config: Parameters<typeof createTestPlatform>[0] = {}) {
  t = await createTestPlatform(config);
  ada = await t.owner();
}

afterEach(async () => {
  await t?.platform.close();
});

// --- fixtures --------------------------------------------------------------------------------

/** An accepted daemon of the workspace, recording sessions unless told otherwise. */
async function aDaemon(workspaceId: string, recordSessions = true): Promise<string> {
  return insertAcceptedDaemon(t, {
    workspaceId,
    targetId: null,
    name: `host-${uuid().slice(0, 8)}`,
    recordSessions,
  });
}

/** An open terminal session, as the relay has it when it starts recording. */
async function aSession(
  workspaceId: string,
  daemonId: string,
  userId: string,
  username = "deploy",
): Promise<DaemonSessionRecord> {
  const now = t.clock.now();
  const session: DaemonSessionRecord = {
    id: uuid(),
    workspaceId,
    daemonId,
    userId,
    username,
    state: "open",
    createdAt: now,
    openedAt: now,
    closedAt: null,
    closeReason: "",
  };
  await t.storage.daemonSessions.insert(session);
  return session;
}

/** Starts a recording that must start. */
async function record(session: DaemonSessionRecord, size = { width: 120, height: 40 }) {
  const recorder = await startSessionRecording(t.platform.services, session, size);
  if (recorder === null) throw new Error("the recording did not start");
  return recorder as SessionRecording;
}

/** A whole recorded session: some output, then close. Returns the recording id. */
async function recordedSession(
  workspaceId: string,
  daemonId: string,
  userId: string,
  text: string,
  username = "deploy",
) {
  const session = await aSession(workspaceId, daemonId, userId, username);
  const recorder = await record(session);
  recorder.output(utf8.encode(text));
  await recorder.close();
  return session.id;
}

/** GetRecording, read to the end: the messages in order. */
async function stream(caller: Caller, workspaceId: string, recordingId: string) {
  const messages: Array<{ meta?: Recording; chunk?: Uint8Array }> = [];
  const request = create(R.getRecording.input, { workspaceId, recordingId });
  for await (const message of t.platform.stream(R.getRecording, createCallContext(caller), request)) {
    if (message.msg.case === "meta") messages.push({ meta: message.msg.value });
    else if (message.msg.case === "chunk") messages.push({ chunk: message.msg.value });
  }
  return messages;
}

/** The recording's metadata and file, read through GetRecording. */
async function fetchRecording(caller: Caller, workspaceId: string, recordingId: string) {
  const messages = await stream(caller, workspaceId, recordingId);
  const [first, ...rest] = messages;
  if (!first?.meta) throw new Error("the stream did not start with meta");
  const chunks = rest.map((m) => {
    if (!m.chunk) throw new Error("meta after the first message");
    return m.chunk;
  });
  return { meta: first.meta, chunks, file: Buffer.concat(chunks) };
}

interface Cast {
  readonly header: { version: number; width: number; height: number; timestamp: number };
  readonly events: Array<[number, string, string]>;
}

/** Parses an asciicast v2 file, checking every line. */
function parseCast(file: Uint8Array): Cast {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(file);
  expect(text.endsWith("\n")).toBe(true);
  const [head, ...lines] = text.slice(0, -1).split("\n");
  const header = JSON.parse(head!);
  expect(header).toMatchObject({ version: 2 });
  expect(Number.isInteger(header.width) && header.width > 0).toBe(true);
  expect(Number.isInteger(header.height) && header.height > 0).toBe(true);
  const events = lines.map((line) => JSON.parse(line) as [number, string, string]);
  let last = 0;
  for (const event of events) {
    expect(event).toHaveLength(3);
    const [time, type, data] = event;
    expect(typeof time).toBe("number");
    expect(time).toBeGreaterThanOrEqual(last);
    last = time;
    expect(["o", "r", "m"]).toContain(type);
    expect(typeof data).toBe("string");
  }
  return { header, events };
}

const outputOf = (cast: Cast) =>
  cast.events
    .filter(([, type]) => type === "o")
    .map(([, , data]) => data)
    .join("");

/** How long to keep polling for a background write (generous: the machine may be busy). */
const patience = { timeout: 15_000, interval: 10 };

/** Lets pending storage writes run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

// --- the recorder ----------------------------------------------------------------------------

describe("the session recorder", () => {
  beforeEach(() => platform());

  it("is null when the daemon does not record sessions (or is unknown)", async () => {
    const off = await aDaemon(ada.workspaceId, false);
    const session = await aSession(ada.workspaceId, off, ada.caller.userId);
    expect(await startSessionRecording(t.platform.services, session, { width: 80, height: 24 })).toBeNull();
    const ghost = { ...session, id: uuid(), daemonId: uuid() };
    expect(await startSessionRecording(t.platform.services, ghost, { width: 80, height: 24 })).toBeNull();
    expect((await t.storage.recordings.list(ada.workspaceId, { limit: 10, offset: 0 })).total).toBe(0);
  });

  it("writes a valid asciicast v2 file: header, monotonic times, split UTF-8 intact, resizes", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const started = t.clock.now();
    const recorder = await record(session, { width: 132, height: 43 });
    const said = "héllo wörld 😀 中文 \u001b[1mbold\u001b[0m\r\n";
    const bytes = utf8.encode(said);
    const byteAt = (char: string) => utf8.encode(said.slice(0, said.indexOf(char))).byteLength;
    // Cut inside the two-byte é, twice inside the four-byte emoji (the middle piece decodes to
    // nothing) and inside a three-byte CJK character.
    const cuts = [2, byteAt("😀") + 1, byteAt("😀") + 3, byteAt("中") + 2];
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      recorder.output(bytes.subarray(from, cut));
      from = cut;
      t.clock.advance(250);
    }
    recorder.resize(200, 50);
    t.clock.advance(-5000); // the clock steps back: times must not
    recorder.output(utf8.encode("after the resize"));
    recorder.resize(0, 50); // nonsense sizes are not recorded
    const before = await t.storage.recordings.findById(ada.workspaceId, session.id);
    expect(before?.complete).toBe(false);
    await recorder.close();

    const { meta, file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    const cast = parseCast(file);
    expect(cast.header).toEqual({
      version: 2,
      width: 132,
      height: 43,
      timestamp: Math.floor(started.getTime() / 1000),
    });
    expect(outputOf(cast)).toBe(`${said}after the resize`);
    expect(cast.events.filter(([, type]) => type === "r")).toEqual([[1.25, "r", "200x50"]]);
    expect(cast.events.map(([time]) => time)).toEqual([0, 0.25, 0.75, 1, 1.25, 1.25]);
    expect(meta).toMatchObject({
      id: session.id,
      workspaceId: ada.workspaceId,
      daemonId: daemon,
      username: "deploy",
      userId: ada.caller.userId,
      format: "asciicast-v2",
      complete: true,
      truncated: false,
      sizeBytes: BigInt(file.byteLength),
    });
    expect(meta.endedAt).toBeDefined();
  });

  it("a nonsensical terminal size starts the file at 80x24", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session, { width: 0, height: Number.NaN });
    await recorder.close();
    const { file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    expect(parseCast(file).header).toMatchObject({ width: 80, height: 24 });
  });

  it("flushes in chunks of at most 64 KiB while the session runs, and completes only on close", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    const line = `${"x".repeat(1023)}\n`;
    let sent = "";
    for (let i = 0; i < 300; i++) {
      recorder.output(utf8.encode(line));
      sent += line;
      await settle();
    }
    // 300 KiB of output: several chunks are stored before the end, and the rest is held back.
    const running = await t.storage.recordings.findById(ada.workspaceId, session.id);
    expect(running?.chunkCount).toBeGreaterThanOrEqual(4);
    expect(running?.complete).toBe(false);
    expect(recorder.backlogBytes).toBeLessThan(2 * recordingChunkBytes);
    await recorder.close();
    const done = await t.storage.recordings.findById(ada.workspaceId, session.id);
    expect(done?.complete).toBe(true);
    const chunks = await t.storage.recordings.scanChunks(ada.workspaceId, session.id, { limit: 1000 });
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
    for (const chunk of chunks.slice(0, -1)) expect(chunk.data.byteLength).toBe(recordingChunkBytes);
    expect(chunks.at(-1)!.data.byteLength).toBeLessThanOrEqual(recordingChunkBytes);
    const file = Buffer.concat(chunks.map((c) => c.data));
    expect(done?.sizeBytes).toBe(file.byteLength);
    expect(outputOf(parseCast(file))).toBe(sent);
  });

  it("writes what waits after the flush interval, without waiting for 64 KiB", async () => {
    await t.platform.close();
    await platform({ config: { recordingFlushIntervalMs: 5 } });
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    recorder.output(utf8.encode("$ ls\r\n"));
    await vi.waitFor(async () => {
      const stored = await t.storage.recordings.findById(ada.workspaceId, session.id);
      expect(stored?.chunkCount).toBe(1);
    }, patience);
    const [chunk] = await t.storage.recordings.scanChunks(ada.workspaceId, session.id, { limit: 10 });
    expect(outputOf(parseCast(chunk!.data))).toBe("$ ls\r\n");
    await recorder.close();
  });

  it("one large output becomes events and chunks of at most 64 KiB", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    const big = "ü".repeat(300_000); // 600,000 bytes, every 64 KiB cut inside no character
    recorder.output(utf8.encode(big));
    await recorder.close();
    const { chunks, file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    for (const chunk of chunks) expect(chunk.byteLength).toBeLessThanOrEqual(recordingChunkBytes);
    const cast = parseCast(file);
    expect(outputOf(cast)).toBe(big);
    for (const [, , data] of cast.events)
      expect(utf8.encode(data).byteLength).toBeLessThanOrEqual(recordingChunkBytes);
  });

  it("stops at the size limit, says so in the file and flags the recording truncated", async () => {
    await t.platform.close();
    await platform({ config: { recordingMaxBytes: 100_000 } });
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    for (let i = 0; i < 300; i++) {
      recorder.output(utf8.encode(`line ${i} ${"=".repeat(990)}\r\n`));
      t.clock.advance(10);
    }
    await recorder.close();
    const { meta, file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    expect(file.byteLength).toBeLessThanOrEqual(100_000);
    expect(file.byteLength).toBeGreaterThan(90_000);
    const cast = parseCast(file);
    const last = cast.events.at(-1)!;
    expect(last[1]).toBe("m");
    expect(last[2]).toMatch(/size limit of 100000 bytes/);
    expect(cast.events.filter(([, type]) => type === "m")).toHaveLength(1);
    expect(meta).toMatchObject({ complete: true, truncated: true, sizeBytes: BigInt(file.byteLength) });
  });

  it("keeps memory bounded through 8 hours at 512 KiB/s", { timeout: 120_000 }, async () => {
    await t.platform.close();
    await platform({ config: { recordingMaxBytes: 8 * 1024 * 1024 } });
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    const piece = utf8.encode(`${"0123456789abcdef".repeat(1023)}\r\n`.slice(0, 16 * 1024));
    let most = 0;
    for (let second = 0; second < 8 * 3600; second++) {
      for (let i = 0; i < 32; i++) {
        recorder.output(piece);
        most = Math.max(most, recorder.backlogBytes);
      }
      t.clock.advance(1000);
      // Output arrives over the network, a second's worth at a time: storage gets its turns.
      while (recorder.backlogBytes > recordingChunkBytes) await settle();
    }
    await recorder.close();
    expect(most).toBeLessThanOrEqual(maxBacklogBytes);
    const stored = await t.storage.recordings.findById(ada.workspaceId, session.id);
    expect(stored).toMatchObject({ complete: true, truncated: true });
    expect(stored!.sizeBytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    const { file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    expect(parseCast(file).events.at(-1)?.[2]).toMatch(/size limit/);
  });

  it("stops (truncated) rather than buffer without bound when storage falls behind", async () => {
    await t.platform.close();
    await platform({ config: { recordingMaxBytes: 64 * 1024 * 1024 } });
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    const piece = utf8.encode("y".repeat(32 * 1024));
    // Output faster than anything can be written: no turn for storage in between.
    for (let i = 0; i < 400; i++) recorder.output(piece);
    expect(recorder.backlogBytes).toBeLessThanOrEqual(maxBacklogBytes);
    await recorder.close();
    const { meta, file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    const cast = parseCast(file);
    expect(cast.events.at(-1)).toEqual([expect.any(Number), "m", expect.stringMatching(/could not keep up/)]);
    expect(meta).toMatchObject({ complete: true, truncated: true });
  });

  it("a recording deleted while it runs stops quietly; a session is recorded once", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    expect(await startSessionRecording(t.platform.services, session, { width: 80, height: 24 })).toBeNull();
    await t.call(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: session.id });
    recorder.output(utf8.encode("x".repeat(200_000)));
    await recorder.close();
    expect(await t.storage.recordings.findById(ada.workspaceId, session.id)).toBeNull();
  });

  it("a failing storage is reported, and the recording stays incomplete", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const base = t.platform.services.storage;
    let broken = false;
    const storage = Object.create(base) as Storage;
    Object.defineProperty(storage, "transaction", {
      value: <T>(fn: Parameters<Storage["transaction"]>[0]) =>
        broken ? Promise.reject(new Error("disk full")) : (base.transaction(fn) as Promise<T>),
    });
    const errors: unknown[] = [];
    const recorder = await startSessionRecording(
      { ...t.platform.services, storage },
      session,
      { width: 80, height: 24 },
      { onError: (error) => errors.push(error) },
    );
    broken = true;
    recorder!.output(utf8.encode("z".repeat(100_000)));
    await expect(recorder!.close()).resolves.toBeUndefined();
    expect(errors.map((e) => (e as Error).message)).toEqual(["disk full"]);
    expect(await t.storage.recordings.findById(ada.workspaceId, session.id)).toMatchObject({
      complete: false,
      endedAt: null,
    });
  });
});

// --- RecordingService ------------------------------------------------------------------------

describe("RecordingService", () => {
  beforeEach(() => platform());

  it("ListRecordings pages newest first, filters by daemon and username, counts total and totalBytes", async () => {
    const d1 = await aDaemon(ada.workspaceId);
    const d2 = await aDaemon(ada.workspaceId);
    const ids: string[] = [];
    for (const [daemon, username, text] of [
      [d1, "root", "a"],
      [d1, "deploy", "bb"],
      [d2, "deploy", "ccc"],
      [d2, "root", "dddd"],
      [d1, "root", "eeeee"],
    ] as const) {
      ids.push(await recordedSession(ada.workspaceId, daemon, ada.caller.userId, text, username));
      t.clock.advance(60_000);
    }
    const sizes = new Map<string, number>();
    for (const id of ids)
      sizes.set(id, (await t.storage.recordings.findById(ada.workspaceId, id))!.sizeBytes);
    const sum = (list: string[]) => BigInt(list.reduce((n, id) => n + sizes.get(id)!, 0));

    const all = await t.call(ada.caller, R.listRecordings, { workspaceId: ada.workspaceId });
    expect(all.recordings.map((r) => r.id)).toEqual([...ids].reverse());
    expect(all.total).toBe(5);
    expect(all.totalBytes).toBe(sum(ids));
    expect(all.recordings.every((r) => r.complete && r.format === "asciicast-v2")).toBe(true);

    const page = await t.call(ada.caller, R.listRecordings, {
      workspaceId: ada.workspaceId,
      limit: 2,
      offset: 1,
    });
    expect(page.recordings.map((r) => r.id)).toEqual([ids[3], ids[2]]);
    expect(page.total).toBe(5);
    expect(page.totalBytes).toBe(sum(ids));

    const root = await t.call(ada.caller, R.listRecordings, {
      workspaceId: ada.workspaceId,
      username: "root",
    });
    expect(root.recordings.map((r) => r.id)).toEqual([ids[4], ids[3], ids[0]]);
    expect(root.totalBytes).toBe(sum([ids[0]!, ids[3]!, ids[4]!]));

    const both = await t.call(ada.caller, R.listRecordings, {
      workspaceId: ada.workspaceId,
      daemonId: d1,
      username: "deploy",
    });
    expect(both.recordings.map((r) => r.id)).toEqual([ids[1]]);
    expect(both.total).toBe(1);

    const none = await t.call(ada.caller, R.listRecordings, {
      workspaceId: ada.workspaceId,
      daemonId: uuid(),
    });
    expect(none).toMatchObject({ recordings: [], total: 0, totalBytes: 0n });
  });

  it("GetRecording streams meta, then chunks whose concatenation is the file", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const text = Array.from({ length: 5000 }, (_, i) => `${i} ${"é".repeat(40)}\r\n`).join("");
    const id = await recordedSession(ada.workspaceId, daemon, ada.caller.userId, text);
    const messages = await stream(ada.caller, ada.workspaceId, id);
    expect(messages[0]?.meta?.id).toBe(id);
    expect(messages.slice(1).every((m) => m.chunk !== undefined && m.meta === undefined)).toBe(true);
    const chunks = messages.slice(1).map((m) => m.chunk!);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) expect(chunk.byteLength).toBeLessThanOrEqual(recordingChunkBytes);
    const file = Buffer.concat(chunks);
    const stored = await t.storage.recordings.scanChunks(ada.workspaceId, id, { limit: 1000 });
    expect(file.equals(Buffer.concat(stored.map((c) => c.data)))).toBe(true);
    expect(messages[0]!.meta!.sizeBytes).toBe(BigInt(file.byteLength));
    expect(outputOf(parseCast(file))).toBe(text);
  });

  it("GetRecording of a running session sends the file as far as the metadata says", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const session = await aSession(ada.workspaceId, daemon, ada.caller.userId);
    const recorder = await record(session);
    recorder.output(utf8.encode("w".repeat(200_000)));
    await vi.waitFor(async () => {
      expect((await t.storage.recordings.findById(ada.workspaceId, session.id))?.chunkCount).toBeGreaterThan(
        0,
      );
    }, patience);
    const { meta, file } = await fetchRecording(ada.caller, ada.workspaceId, session.id);
    expect(meta.complete).toBe(false);
    expect(meta.endedAt).toBeUndefined();
    expect(BigInt(file.byteLength)).toBe(meta.sizeBytes);
    await recorder.close();
  });

  it("DeleteRecording deletes, is audited, and the recording is gone", async () => {
    const daemon = await aDaemon(ada.workspaceId);
    const id = await recordedSession(ada.workspaceId, daemon, ada.caller.userId, "rm -rf /tmp/x\r\n");
    await t.call(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: id });
    const audit = await t.storage.auditEvents.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      action: "recording.delete",
    });
    expect(audit.items).toHaveLength(1);
    expect(audit.items[0]).toMatchObject({ resource: `recording:${id}`, actorId: ada.caller.userId });
    await expectCode(
      t.call(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: id }),
      "not_found",
    );
    await expectCode(fetchRecording(ada.caller, ada.workspaceId, id), "not_found");
    expect((await t.call(ada.caller, R.listRecordings, { workspaceId: ada.workspaceId })).total).toBe(0);
    expect(await t.storage.recordings.scanChunks(ada.workspaceId, id, { limit: 10 })).toEqual([]);
    // A failed delete writes no audit entry.
    const after = await t.storage.auditEvents.list(ada.workspaceId, {
      limit: 10,
      offset: 0,
      action: "recording.delete",
    });
    expect(after.items).toHaveLength(1);
  });

  describe("permissions", () => {
    it("owners and admins see and delete every recording; others see only their own and delete none", async () => {
      const admin = await memberWithRole(t, ada.workspaceId, "admin");
      const editor = await memberWithRole(t, ada.workspaceId, "editor");
      const viewer = await memberWithRole(t, ada.workspaceId, "viewer");
      const robot = await serviceAccountCaller(t, ada, "editor");
      const daemon = await aDaemon(ada.workspaceId);
      const mine = {
        owner: await recordedSession(ada.workspaceId, daemon, ada.caller.userId, "owner"),
        editor: await recordedSession(ada.workspaceId, daemon, editor.caller.userId, "editor"),
        viewer: await recordedSession(ada.workspaceId, daemon, viewer.caller.userId, "viewer"),
        robot: await recordedSession(ada.workspaceId, daemon, robot.serviceAccountId, "robot"),
      };
      const everything = Object.values(mine).sort();
      const listed = async (caller: Caller) =>
        (await t.call(caller, R.listRecordings, { workspaceId: ada.workspaceId })).recordings
          .map((r) => r.id)
          .sort();

      expect(await listed(ada.caller)).toEqual(everything);
      expect(await listed(admin.caller)).toEqual(everything);
      expect(await listed(editor.caller)).toEqual([mine.editor]);
      expect(await listed(viewer.caller)).toEqual([mine.viewer]);
      expect(await listed(robot)).toEqual([mine.robot]);
      const viewerList = await t.call(viewer.caller, R.listRecordings, { workspaceId: ada.workspaceId });
      expect(viewerList.total).toBe(1);

      // Reading: your own, or anything with recordings.read; someone else's is "not found".
      expect((await fetchRecording(editor.caller, ada.workspaceId, mine.editor)).meta.id).toBe(mine.editor);
      expect((await fetchRecording(robot, ada.workspaceId, mine.robot)).meta.id).toBe(mine.robot);
      expect((await fetchRecording(admin.caller, ada.workspaceId, mine.viewer)).meta.id).toBe(mine.viewer);
      const theirs = await expectCode(
        fetchRecording(viewer.caller, ada.workspaceId, mine.owner),
        "not_found",
      );
      const unknownId = uuid();
      const unknown = await expectCode(
        fetchRecording(viewer.caller, ada.workspaceId, unknownId),
        "not_found",
      );
      expect(theirs.message.replace(mine.owner, "<id>")).toBe(unknown.message.replace(unknownId, "<id>"));
      expect(theirs.reason).toBe(unknown.reason);

      // Deleting needs recordings.delete, even for your own.
      for (const caller of [editor.caller, viewer.caller, robot]) {
        for (const id of everything) {
          await expectCode(
            t.call(caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: id }),
            "permission_denied",
          );
        }
      }
      await t.call(admin.caller, R.deleteRecording, {
        workspaceId: ada.workspaceId,
        recordingId: mine.editor,
      });
      await t.call(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: mine.viewer });
      expect(await listed(ada.caller)).toEqual([mine.owner, mine.robot].sort());
    });

    it("a daemon may not read or delete recordings", async () => {
      const daemon = await aDaemon(ada.workspaceId);
      const id = await recordedSession(ada.workspaceId, daemon, ada.caller.userId, "x");
      const caller: Caller = { kind: "daemon", daemonId: daemon, workspaceId: ada.workspaceId };
      await expectCode(
        t.call(caller, R.listRecordings, { workspaceId: ada.workspaceId }),
        "permission_denied",
      );
      await expectCode(fetchRecording(caller, ada.workspaceId, id), "permission_denied");
      await expectCode(
        t.call(caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: id }),
        "permission_denied",
      );
      await expectCode(
        t.call({ kind: "anonymous" }, R.listRecordings, { workspaceId: ada.workspaceId }),
        "unauthenticated",
      );
    });
  });

  describe("tenant isolation", () => {
    it("another workspace's recording answers exactly like an unknown one, and stays untouched", async () => {
      const bob = await t.owner();
      const daemonB = await aDaemon(bob.workspaceId);
      const theirs = await recordedSession(bob.workspaceId, daemonB, bob.caller.userId, "B's secret output");
      const before = await t.storage.recordings.findById(bob.workspaceId, theirs);
      const unknownId = uuid();

      // Aimed at B: not a member.
      await expectCode(t.call(ada.caller, R.listRecordings, { workspaceId: bob.workspaceId }), "not_found");
      await expectCode(fetchRecording(ada.caller, bob.workspaceId, theirs), "not_found");
      await expectCode(
        t.call(ada.caller, R.deleteRecording, { workspaceId: bob.workspaceId, recordingId: theirs }),
        "not_found",
      );

      // Aimed at A with B's ids: the same answer as random ids.
      const blank = (e: PlatformError, id: string) => ({
        code: e.code,
        reason: e.reason,
        message: e.message.replace(id, "<id>"),
      });
      for (const run of [
        (id: string) => fetchRecording(ada.caller, ada.workspaceId, id),
        (id: string) =>
          t.call(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId, recordingId: id }),
      ]) {
        const b = await expectCode(run(theirs), "not_found");
        const random = await expectCode(run(unknownId), "not_found");
        expect(blank(b, theirs)).toEqual(blank(random, unknownId));
      }
      const filtered = await t.call(ada.caller, R.listRecordings, {
        workspaceId: ada.workspaceId,
        daemonId: daemonB,
      });
      expect(filtered).toMatchObject({ recordings: [], total: 0, totalBytes: 0n });

      expect(await t.storage.recordings.findById(bob.workspaceId, theirs)).toEqual(before);
      expect((await fetchRecording(bob.caller, bob.workspaceId, theirs)).meta.id).toBe(theirs);
    });
  });

  describe("bad input", () => {
    const violated = violatedFieldsOf(() => t);

    it("recordingId must be a uuid (and is required); ids are checked before anything else", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.string({ maxLength: 40 }).filter((s) => !/^[0-9a-f-]{36}$/i.test(s)),
          async (id) => {
            expect(
              await violated(ada.caller, R.deleteRecording, {
                workspaceId: ada.workspaceId,
                recordingId: id,
              }),
            ).toEqual(["recordingId"]);
            const error = await expectCode(
              fetchRecording(ada.caller, ada.workspaceId, id),
              "invalid_argument",
            );
            expect(error.violations.map((v) => v.field)).toEqual(["recordingId"]);
          },
        ),
        { numRuns: 40 },
      );
      expect(await violated(ada.caller, R.deleteRecording, { workspaceId: ada.workspaceId })).toEqual([
        "recordingId",
      ]);
      const missing = await expectCode(
        fetchRecording(ada.caller, ada.workspaceId, undefined as unknown as string),
        "invalid_argument",
      );
      expect(missing.violations.map((v) => v.field)).toEqual(["recordingId"]);
    });

    it("limit is 1-100 and offset at least 0, on both sides of each bound", async () => {
      const list = (fields: Record<string, unknown>) =>
        violated(ada.caller, R.listRecordings, { workspaceId: ada.workspaceId, ...fields });
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 100 }),
          fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          async (limit, offset) => {
            expect(await list({ limit, offset })).toEqual([]);
          },
        ),
        { numRuns: 30 },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.integer({ min: -(2 ** 31), max: 0 }), fc.integer({ min: 101, max: 2 ** 31 - 1 })),
          async (limit) => {
            expect(await list({ limit })).toEqual(["limit"]);
          },
        ),
        { numRuns: 30 },
      );
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: -(2 ** 31), max: -1 }), async (offset) => {
          expect(await list({ offset })).toEqual(["offset"]);
        }),
        { numRuns: 30 },
      );
      for (const [fields, expected] of [
        [{ limit: 0 }, ["limit"]],
        [{ limit: 1 }, []],
        [{ limit: 100 }, []],
        [{ limit: 101 }, ["limit"]],
        [{ offset: -1 }, ["offset"]],
        [{ offset: 0 }, []],
      ] as const) {
        expect(await list(fields)).toEqual(expected);
      }
    });

    it("the username filter is a Unix login name of 1-32 characters; the daemon filter a uuid", async () => {
      const list = (fields: Record<string, unknown>) =>
        violated(ada.caller, R.listRecordings, { workspaceId: ada.workspaceId, ...fields });
      const login = fc.constantFrom("a", "z", "_", "0", "-");
      await fc.assert(
        fc.asyncProperty(
          fc
            .integer({ min: 1, max: 32 })
            .chain((n) => ofLength(n - 1, login).map((rest) => `d${rest}`.slice(0, n))),
          async (username) => {
            expect(await list({ username })).toEqual([]);
          },
        ),
        { numRuns: 30 },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 33, max: 80 }).chain((n) => ofLength(n, fc.constant("a"))),
          async (username) => {
            expect(await list({ username })).toEqual(["username"]);
          },
        ),
        { numRuns: 20 },
      );
      for (const username of ["", "Root", "9lives", "a b", "dollar$$", "x".repeat(33)]) {
        // "" breaks both the length and the pattern: the field is named once per rule.
        expect(new Set(await list({ username }))).toEqual(new Set(["username"]));
      }
      expect(await list({ username: `${"x".repeat(31)}$` })).toEqual([]);
      await fc.assert(
        fc.asyncProperty(
          fc.string({ maxLength: 40 }).filter((s) => !/^[0-9a-f-]{36}$/i.test(s)),
          async (daemonId) => {
            expect(await list({ daemonId })).toEqual(["daemonId"]);
          },
        ),
        { numRuns: 30 },
      );
      expect(await list({ daemonId: uuid().toUpperCase() })).toEqual([]);
    });
  });
});

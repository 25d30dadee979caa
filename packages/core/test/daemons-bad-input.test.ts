/**
 * Every validation bound of the daemon protocol (the contract and our own limits where the
 * contract sets none), on both sides of each bound, through the operations. A request that
 * passes validation may still fail for another reason: only validation errors name fields.
 */
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { DaemonService, SessionKind } from "@wap/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Caller } from "../src/context.js";
import { syncLimits } from "../src/daemons/sync.js";
import { sshRecordingLimits } from "../src/recordings/ssh-recording.js";
import { sshSessionLimits } from "../src/sessions/ssh-sessions.js";
import type { Owner } from "./support/access.js";
import { ofLength, violatedFieldsOf } from "./support/bounds.js";
import { aDaemonKey } from "./support/daemons.js";
import { createTestPlatform, type TestPlatform } from "./support.js";

let t: TestPlatform;
let ada: Owner;
let daemon: Caller;
beforeAll(async () => {
  t = await createTestPlatform();
  ada = await t.owner();
  daemon = { kind: "daemon", daemonId: crypto.randomUUID(), workspaceId: ada.workspaceId };
});
afterAll(() => t.platform.close());

const anonymous: Caller = { kind: "anonymous" };
const uuid = () => crypto.randomUUID();
const pem = aDaemonKey().pem;
const D = DaemonService.method;

const violatedFields = violatedFieldsOf(() => t);

interface LengthRule {
  readonly name: string;
  readonly caller: () => Caller;
  // biome-ignore lint/suspicious/noExplicitAny: one table for methods of every shape.
  readonly method: DescMethodUnary<any, any>;
  readonly field: string;
  readonly min: number;
  readonly max: number;
  readonly request: (value: string) => Record<string, unknown>;
  readonly chars?: fc.Arbitrary<string>;
}

const enrollRequest = { token: "wapenr_x", caId: "", authMethod: "soft", authPubkey: pem };
const emptySync = { users: [], privateIps: [], metadata: {} };
const begin = {
  certificate: "ssh-ed25519-cert-v01@openssh.com AAAA",
  username: "ubuntu",
  kind: SessionKind.EXEC,
};

const rules: LengthRule[] = [
  {
    name: "EnrollDaemon.token 1-512",
    caller: () => anonymous,
    method: D.enrollDaemon,
    field: "token",
    min: 1,
    max: 512,
    request: (v) => ({ ...enrollRequest, token: v }),
  },
  {
    name: "EnrollDaemon.caId <= 256 (an id or a name)",
    caller: () => anonymous,
    method: D.enrollDaemon,
    field: "caId",
    min: 0,
    max: 256,
    request: (v) => ({ ...enrollRequest, caId: v }),
  },
  {
    name: "SyncDaemon.users[] 1-256",
    caller: () => daemon,
    method: D.syncDaemon,
    field: "users.0",
    min: 1,
    max: syncLimits.userLength,
    request: (v) => ({ ...emptySync, users: [v] }),
  },
  {
    name: "SyncDaemon.metadata keys 1-64",
    caller: () => daemon,
    method: D.syncDaemon,
    field: "metadata",
    min: 1,
    max: syncLimits.metadataKeyLength,
    request: (v) => ({ ...emptySync, metadata: { [v]: "x" } }),
  },
  {
    name: "SyncDaemon.metadata values <= 1024",
    caller: () => daemon,
    method: D.syncDaemon,
    field: "metadata.os",
    min: 0,
    max: syncLimits.metadataValueLength,
    request: (v) => ({ ...emptySync, metadata: { os: v } }),
  },
  {
    name: "BeginSSHSession.certificate 1-16384",
    caller: () => daemon,
    method: D.beginSSHSession,
    field: "certificate",
    min: 1,
    max: sshSessionLimits.certificateLength,
    request: (v) => ({ ...begin, certificate: v }),
  },
  {
    name: "BeginSSHSession.clientAddress <= 64",
    caller: () => daemon,
    method: D.beginSSHSession,
    field: "clientAddress",
    min: 0,
    max: sshSessionLimits.clientAddressLength,
    request: (v) => ({ ...begin, clientAddress: v }),
  },
  {
    name: "BeginSSHSession.command <= 4096",
    caller: () => daemon,
    method: D.beginSSHSession,
    field: "command",
    min: 0,
    max: sshSessionLimits.commandLength,
    request: (v) => ({ ...begin, command: v }),
  },
  {
    name: "EndSSHSession.reason <= 512",
    caller: () => daemon,
    method: D.endSSHSession,
    field: "reason",
    min: 0,
    max: sshSessionLimits.reasonLength,
    request: (v) => ({ sessionId: uuid(), reason: v }),
  },
  {
    name: "CreateSession.username 1-32 with the pattern",
    caller: () => ada.caller,
    method: D.createSession,
    field: "username",
    min: 1,
    max: 32,
    chars: fc.constantFrom("a", "z", "0", "_", "-"),
    request: (v) => ({
      workspaceId: ada.workspaceId,
      daemonId: uuid(),
      username: v === "" ? "" : `u${v.slice(1)}`,
    }),
  },
];

describe("length rules, both sides of each bound", () => {
  for (const rule of rules) {
    it(rule.name, async () => {
      const within = fc.integer({ min: rule.min, max: rule.max });
      await fc.assert(
        fc.asyncProperty(
          within.chain((n) => ofLength(n, rule.chars)),
          async (value) => {
            const fields = await violatedFields(rule.caller(), rule.method, rule.request(value));
            expect(fields.filter((f) => f.startsWith(rule.field))).toEqual([]);
          },
        ),
        { numRuns: 25 },
      );
      const outside = [fc.integer({ min: rule.max + 1, max: rule.max + 40 })];
      if (rule.min > 0) outside.push(fc.integer({ min: 0, max: rule.min - 1 }));
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(...outside).chain((n) => ofLength(n, rule.chars)),
          async (value) => {
            const fields = await violatedFields(rule.caller(), rule.method, rule.request(value));
            expect(fields.some((f) => f.startsWith(rule.field))).toBe(true);
          },
        ),
        { numRuns: 25 },
      );
    });
  }
});

describe("patterns, enums and required fields", () => {
  it("CreateSession.username: a Unix login name, optionally ending in '$'", async () => {
    const valid = fc
      .tuple(
        fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz_"),
        fc.array(fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789_-"), { maxLength: 30 }),
        fc.boolean(),
      )
      .map(([first, rest, dollar]) => `${first}${rest.join("")}${dollar ? "$" : ""}`);
    await fc.assert(
      fc.asyncProperty(valid, async (username) => {
        const fields = await violatedFields(ada.caller, D.createSession, {
          workspaceId: ada.workspaceId,
          daemonId: uuid(),
          username,
        });
        expect(fields).toEqual([]);
      }),
      { numRuns: 40 },
    );
    for (const username of ["Root", "0day", "-x", "a$b", "$", "a$$", "ubuntu ", "é", "a.b"]) {
      expect(
        await violatedFields(ada.caller, D.createSession, {
          workspaceId: ada.workspaceId,
          daemonId: uuid(),
          username,
        }),
      ).toEqual(["username"]);
    }
  });

  it("daemonId and sessionId are required uuids; workspaceId a uuid", async () => {
    const ws = ada.workspaceId;
    expect(await violatedFields(ada.caller, D.createSession, { workspaceId: ws, username: "u" })).toEqual([
      "daemonId",
    ]);
    expect(await violatedFields(ada.caller, D.listSessions, { workspaceId: ws })).toEqual(["daemonId"]);
    expect(await violatedFields(ada.caller, D.listSessions, { workspaceId: ws, daemonId: "nope" })).toEqual([
      "daemonId",
    ]);
    expect(await violatedFields(ada.caller, D.closeSession, { workspaceId: ws, daemonId: uuid() })).toEqual([
      "sessionId",
    ]);
    expect(
      await violatedFields(ada.caller, D.closeSession, { workspaceId: ws, daemonId: uuid(), sessionId: "x" }),
    ).toEqual(["sessionId"]);
    expect(await violatedFields(ada.caller, D.refreshEnrollToken, { workspaceId: "nope" })).toEqual([
      "workspaceId",
    ]);
    expect(await violatedFields(ada.caller, D.revokeEnrollToken, { workspaceId: "nope" })).toEqual([
      "workspaceId",
    ]);
  });

  it("EnrollDaemon: authMethod 'tpm' or 'soft'; authPubkey 1-4096 characters", async () => {
    for (const authMethod of ["", "TPM", "hsm", "soft "]) {
      expect(await violatedFields(anonymous, D.enrollDaemon, { ...enrollRequest, authMethod })).toEqual([
        "authMethod",
      ]);
    }
    expect(await violatedFields(anonymous, D.enrollDaemon, { ...enrollRequest, authPubkey: "" })).toEqual([
      "authPubkey",
    ]);
    expect(
      await violatedFields(anonymous, D.enrollDaemon, { ...enrollRequest, authPubkey: "x".repeat(4097) }),
    ).toEqual(["authPubkey"]);
    expect(
      await violatedFields(anonymous, D.enrollDaemon, { ...enrollRequest, authPubkey: "x".repeat(4096) }),
    ).toEqual(["authPubkey"]);
  });

  it("BeginSSHSession: kind SHELL, EXEC or SUBSYSTEM; username a login name; EndSSHSession: counters >= 0, sessionId a uuid", async () => {
    for (const kind of [SessionKind.UNSPECIFIED, SessionKind.TERMINAL, 99]) {
      expect(await violatedFields(daemon, D.beginSSHSession, { ...begin, kind })).toEqual(["kind"]);
    }
    for (const kind of [SessionKind.SHELL, SessionKind.EXEC, SessionKind.SUBSYSTEM]) {
      expect(await violatedFields(daemon, D.beginSSHSession, { ...begin, kind })).toEqual([]);
    }
    expect(await violatedFields(daemon, D.beginSSHSession, { ...begin, username: "Root" })).toEqual([
      "username",
    ]);
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), async (n) => {
        const fields = await violatedFields(daemon, D.endSSHSession, {
          sessionId: uuid(),
          bytesIn: n,
          bytesOut: n,
        });
        expect(fields).toEqual(n < 0n ? ["bytesIn", "bytesOut"] : []);
      }),
      { numRuns: 40 },
    );
    expect(await violatedFields(daemon, D.endSSHSession, { sessionId: "x" })).toEqual(["sessionId"]);
  });

  it("AppendSSHRecording: data at most 64 KiB, offset >= 0", async () => {
    const append = (request: Record<string, unknown>) =>
      violatedFields(daemon, D.appendSSHRecording, { sessionId: uuid(), offset: 0n, ...request });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: sshRecordingLimits.appendBytes + 64 }), async (n) => {
        const fields = await append({ data: new Uint8Array(n) });
        expect(fields).toEqual(n > sshRecordingLimits.appendBytes ? ["data"] : []);
      }),
      { numRuns: 25 },
    );
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), async (offset) => {
        expect(await append({ offset, data: new Uint8Array(1) })).toEqual(offset < 0n ? ["offset"] : []);
      }),
      { numRuns: 40 },
    );
  });

  it("SyncDaemon: at most 256 users, 32 addresses, 64 metadata entries", async () => {
    const sync = (request: Record<string, unknown>) =>
      violatedFields(daemon, D.syncDaemon, { ...emptySync, ...request });
    const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`);
    const ips = (n: number) => Array.from({ length: n }, (_, i) => `10.0.${i >> 8}.${i & 255}:4022`);
    const meta = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
    expect(await sync({ users: users(syncLimits.users) })).toEqual([]);
    expect(await sync({ users: users(syncLimits.users + 1) })).toEqual(["users"]);
    expect(await sync({ privateIps: ips(syncLimits.endpoints) })).toEqual([]);
    expect(await sync({ privateIps: ips(syncLimits.endpoints + 1) })).toEqual(["privateIps"]);
    expect(await sync({ metadata: meta(syncLimits.metadataEntries) })).toEqual([]);
    expect(await sync({ metadata: meta(syncLimits.metadataEntries + 1) })).toEqual(["metadata"]);
    expect(await sync({ privateIps: ["10.0.0.1:4022", "nope"] })).toEqual(["privateIps.1"]);
    expect(await sync({ privateIps: [`10.0.0.1:${"1".repeat(syncLimits.endpointLength)}`] })).toEqual([
      "privateIps.0",
    ]);
  });
});

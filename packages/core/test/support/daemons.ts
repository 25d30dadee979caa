/**
 * A simulated agent daemon for the core tests: a P-256 key signing real `Platform` challenges,
 * enrolment with the hostname header, and calls authenticated as the daemon.
 */
import { randomUUID } from "node:crypto";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { DaemonService, DaemonStatus, PrincipalService, PrincipalType } from "@wap/api";
import { aDaemonKey, type DaemonKey, signChallenge } from "@wap/test-kit/daemon-key";
import { type Caller, createCallContext, type DaemonCaller } from "../../src/context.js";
import { authenticateDaemon } from "../../src/daemons/authenticate.js";
import { openControlStream } from "../../src/daemons/control.js";
import { procedureOf } from "../../src/platform/platform.js";
import type { TestPlatform } from "../support.js";
import { type Owner, sshAuthority } from "./access.js";

export { aDaemonKey, type DaemonKey, signChallenge };

/** An enrolled daemon as the tests drive it. */
export interface TestDaemon {
  readonly key: DaemonKey;
  readonly id: string;
  readonly workspaceId: string;
  readonly targetId: string;
}

/** Enrols `key` with `token`, as an unauthenticated daemon sending its hostname header. */
export async function enroll(
  t: TestPlatform,
  token: string,
  options: { key?: DaemonKey; hostname?: string; caId?: string; authMethod?: string } = {},
): Promise<TestDaemon & { response: MessageShape<typeof DaemonService.method.enrollDaemon.output> }> {
  const key = options.key ?? aDaemonKey();
  const headers: Record<string, string> = {};
  if (options.hostname !== undefined) headers["platform-daemon-hostname"] = options.hostname;
  const response = await t.platform.invoke(
    DaemonService.method.enrollDaemon,
    createCallContext({ kind: "anonymous" }, { headers }),
    create(DaemonService.method.enrollDaemon.input, {
      token,
      caId: options.caId ?? "",
      authMethod: options.authMethod ?? "tpm",
      authPubkey: key.pem,
    }),
  );
  return { key, id: response.id, workspaceId: response.workspaceId, targetId: response.targetId, response };
}

/** An SSH authority in `owner`'s workspace and a daemon enrolled with the workspace's token. */
export async function enrolledDaemon(t: TestPlatform, owner: Owner, hostname: string): Promise<TestDaemon> {
  await sshAuthority(t, owner);
  const { token } = await t.call(owner.caller, DaemonService.method.refreshEnrollToken, {
    workspaceId: owner.workspaceId,
  });
  return enroll(t, token, { hostname });
}

/** An accepted, online daemon written straight to storage: one the tests list, never one that calls. */
export async function insertAcceptedDaemon(
  t: TestPlatform,
  daemon: { workspaceId: string; targetId: string | null; name: string; recordSessions: boolean },
): Promise<string> {
  const now = t.clock.now();
  const id = randomUUID();
  await t.storage.daemons.insert({
    id,
    ...daemon,
    status: "accepted",
    metadata: {},
    authPublicKey: "",
    authMethod: "tpm",
    onlineSince: now,
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

/** Authenticates as the daemon for one call of `method`, as the transport would. */
export async function daemonCaller(
  t: TestPlatform,
  daemon: Pick<TestDaemon, "key" | "id">,
  method: { parent: { typeName: string }; name: string },
): Promise<DaemonCaller> {
  const procedure = procedureOf(method);
  return authenticateDaemon(t.platform.services, {
    value: signChallenge(daemon.key, daemon.id, procedure, { at: t.clock.now() }),
    procedure,
  });
}

/** Calls `method` as the daemon, with a fresh signed challenge. */
export async function callAsDaemon<I extends DescMessage, O extends DescMessage>(
  t: TestPlatform,
  daemon: Pick<TestDaemon, "key" | "id">,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
): Promise<MessageShape<O>> {
  const caller = await daemonCaller(t, daemon, method);
  return t.platform.invoke(method, createCallContext(caller), create(method.input, request));
}

/** Grants `subjectIds` the login `username` on a target, keeping the target's other usernames. */
export async function grantLogin(
  t: TestPlatform,
  owner: { caller: Caller; workspaceId: string },
  targetId: string,
  username: string,
  type: PrincipalType,
  subjectIds: string[],
): Promise<string> {
  const existing = await t.storage.principals.listByTargets(owner.workspaceId, [targetId]);
  const usernames = [...new Set([...existing.map((p) => p.username), username])];
  await t.call(owner.caller, PrincipalService.method.setPrincipals, {
    workspaceId: owner.workspaceId,
    targetId,
    usernames,
  });
  const principal = (await t.storage.principals.listByTargets(owner.workspaceId, [targetId])).find(
    (p) => p.username === username,
  )!;
  if (subjectIds.length > 0) {
    await t.call(owner.caller, PrincipalService.method.addSubjectsToPrincipal, {
      workspaceId: owner.workspaceId,
      id: principal.id,
      subjectIds,
      type,
    });
  }
  return principal.id;
}

/**
 * A daemon ready to host terminal sessions: enrolled, accepted, online through a control stream
 * held by `holder`, reporting the user `ubuntu`, whom the owner may log in as.
 */
export async function terminalReadyDaemon(
  t: TestPlatform,
  owner: Owner,
  hostname: string,
  holder = "instance-a/1",
): Promise<{ daemon: TestDaemon; self: DaemonCaller }> {
  const daemon = await enrolledDaemon(t, owner, hostname);
  const self: DaemonCaller = { kind: "daemon", daemonId: daemon.id, workspaceId: owner.workspaceId };
  await grantLogin(t, owner, daemon.targetId, "ubuntu", PrincipalType.USER, [owner.caller.userId]);
  await t.call(owner.caller, DaemonService.method.updateDaemon, {
    workspaceId: owner.workspaceId,
    id: daemon.id,
    status: DaemonStatus.ACCEPTED,
  });
  await openControlStream(t.platform.services, self, holder);
  await callAsDaemon(t, daemon, DaemonService.method.syncDaemon, {
    users: ["ubuntu"],
    privateIps: [],
    metadata: {},
  });
  return { daemon, self };
}

/** A terminal session the owner opens on the daemon as `ubuntu`: its id. */
export async function createdSession(t: TestPlatform, owner: Owner, daemon: TestDaemon): Promise<string> {
  const res = await t.call(owner.caller, DaemonService.method.createSession, {
    workspaceId: owner.workspaceId,
    daemonId: daemon.id,
    username: "ubuntu",
  });
  return res.session!.sessionId;
}

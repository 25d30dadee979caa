/**
 * The storage contract of SSH logins: every field round-trips, live logins are listed per
 * daemon, a login ends once. Registered by `runStorageContract`.
 *
 * @module
 */
import { describe, expect } from "vitest";
import type { SshSessionRecord } from "../../storage/ssh-sessions.js";
import {
  aDaemon,
  type ContractContext,
  concurrency,
  daemonAt,
  expectUnique,
  seedDaemon,
  uid,
} from "./fixtures.js";

function anSshSession(
  workspaceId: string,
  daemonId: string,
  overrides: Partial<SshSessionRecord> = {},
): SshSessionRecord {
  return {
    id: uid(),
    workspaceId,
    daemonId,
    subjectId: uid(),
    subjectType: "user",
    username: "deploy",
    caId: uid(),
    certificateSerial: "18446744073709551615",
    keyId: "ada@example.com",
    clientAddress: "[fd00::5]:50022",
    kind: "exec",
    command: "ls -l 'ünïcødé dir'",
    tty: false,
    recorded: true,
    startedAt: daemonAt(20, 3),
    endedAt: null,
    exitStatus: null,
    bytesIn: 0,
    bytesOut: 0,
    endedBy: "",
    endReason: "",
    ...overrides,
  };
}

export function runSshSessionContract(ctx: ContractContext): void {
  describe("ssh sessions", () => {
    ctx.test("sshSessions: every field round-trips; another workspace's id finds nothing", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = await ctx.seedWorkspace();
      const live = anSshSession(workspace.id, daemon.id);
      const ended = anSshSession(workspace.id, daemon.id, {
        subjectType: "service_account",
        kind: "shell",
        command: "",
        tty: true,
        recorded: false,
        endedAt: daemonAt(30, 9),
        exitStatus: 130,
        bytesIn: 2 ** 40,
        bytesOut: 2 ** 41 + 1,
        endedBy: "system:grant removed",
        endReason: "the grant was removed",
      });
      await storage.sshSessions.insert(live);
      await storage.sshSessions.insert(ended);
      expect(await storage.sshSessions.findById(workspace.id, live.id)).toEqual(live);
      expect(await storage.sshSessions.findById(workspace.id, ended.id)).toEqual(ended);
      expect(await storage.sshSessions.findById(other.workspace.id, live.id)).toBeNull();
      await expectUnique(storage.sshSessions.insert({ ...live }), "ssh_sessions.id");
      expect(await storage.sshSessions.listLiveByDaemon(other.workspace.id, daemon.id)).toEqual([]);
      const end = {
        at: daemonAt(40),
        exitStatus: 0,
        bytesIn: 1,
        bytesOut: 2,
        endedBy: "daemon",
        reason: "x",
      };
      expect(await storage.sshSessions.end(other.workspace.id, live.id, end)).toBeNull();
      expect(await storage.sshSessions.findById(workspace.id, live.id)).toEqual(live);
    });

    ctx.test("sshSessions: listLiveByDaemon lists the daemon's live logins, oldest first", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const other = aDaemon(workspace.id);
      await storage.daemons.insert(other);
      const newer = anSshSession(workspace.id, daemon.id, { startedAt: daemonAt(50) });
      const older = anSshSession(workspace.id, daemon.id, { startedAt: daemonAt(10) });
      const ended = anSshSession(workspace.id, daemon.id, { endedAt: daemonAt(60), endReason: "done" });
      const elsewhere = anSshSession(workspace.id, other.id);
      for (const s of [newer, older, ended, elsewhere]) await storage.sshSessions.insert(s);
      const ids = (await storage.sshSessions.listLiveByDaemon(workspace.id, daemon.id)).map((s) => s.id);
      expect(ids).toEqual([older.id, newer.id]);
    });

    ctx.test("sshSessions: end ends a live login once; the first end wins", async () => {
      const { storage, workspace, daemon } = await seedDaemon(ctx);
      const session = anSshSession(workspace.id, daemon.id);
      await storage.sshSessions.insert(session);
      const results = await Promise.all(
        Array.from({ length: concurrency }, (_, i) =>
          storage.sshSessions.end(workspace.id, session.id, {
            at: daemonAt(70, i),
            exitStatus: i,
            bytesIn: i,
            bytesOut: i,
            endedBy: "daemon",
            reason: `reason ${i}`,
          }),
        ),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(await storage.sshSessions.findById(workspace.id, session.id)).toEqual(winners[0]);
      expect(await storage.sshSessions.listLiveByDaemon(workspace.id, daemon.id)).toEqual([]);
    });
  });
}

/**
 * Plain `ssh` logins as sessions of the platform, end to end: a real server, the real
 * `wap-agent`, and a real OpenSSH sshd configured with nothing but what `wap-agent sshd-config`
 * prints (its files, then the Match block that forces the session wrapper). The account logged
 * into, `wapuser`, exists only in sshd's private mount namespace (uid 0, bash, a test folder as
 * home), so its rc files are the test's.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { PrincipalType, SessionKind, SignSSHCertificateRequest_CertificateType } from "@wap/api";
import type { PlatformClient } from "@wap/client";
import { runAgent } from "@wap/test-kit/agent-process";
import {
  type SshUserCertificate as Certificate,
  sshLogin as login,
  type SshWorld,
  sshClientEnv,
  startSshWorld,
} from "@wap/test-kit/ssh-world";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let world: SshWorld;
let dir: string;
let home: string;
let ada: PlatformClient;
let userId: string;
let workspaceId: string;
let caId: string;
let daemonId: string;
let targetId: string;
let sshdDir: string;

type Truthy<T> = Exclude<T, false | null | undefined | 0 | "">;

async function until<T>(probe: () => T | Promise<T>): Promise<Truthy<T>> {
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const userCertificate = (name: string) => world.userCertificate(name);

/** The real ssh client with `flags` before the host, `command` after it; stdin from `input`. */
function ssh(
  certificate: Certificate,
  flags: readonly string[],
  command: readonly string[] = [],
  input = "",
): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const args = [...world.clientOptions(certificate), "-l", login, ...flags, "127.0.0.1", ...command];
  const child = spawn("ssh", args, { env: sshClientEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  child.stdin!.end(input);
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("exit", (code) => {
      // Output still in the pipes arrives before "close".
      child.once("close", () => resolve({ code, stdout, stderr }));
      if (child.stdout!.readableEnded && child.stderr!.readableEnded) resolve({ code, stdout, stderr });
    }),
  );
  return { child, done };
}

async function auditOf(sessionId: string) {
  const { logs } = await ada.util.listAuditLogs({ workspaceId, limit: 100 });
  return logs.filter((l) => l.resource === `ssh_session:${sessionId}`);
}

async function liveLogins() {
  const { sessions } = await ada.daemons.listSessions({ workspaceId, daemonId });
  return sessions.filter((s) => s.kind !== SessionKind.TERMINAL);
}

const principalId = () => world.principalId();
const grant = () => world.grant();
const revoke = () => world.revoke();

beforeAll(async () => {
  let emptyDir: string | undefined;
  world = await startSshWorld({
    name: "wap-ssh-sessions",
    daemonName: "web-1",
    checkConfig(lines) {
      const socket = lines.find((l) => l.includes("ForceCommand"));
      const match = lines.slice(lines.indexOf("Match all"));
      const empty = /ZDOTDIR=(\S+)\/empty/.exec(match[3] ?? "")?.[1];
      emptyDir = empty;
      expect(match.slice(0, 4)).toEqual([
        "Match all",
        "\tExposeAuthInfo yes",
        "\tPermitUserRC no",
        `\tSetEnv SHLVL=1 ZDOTDIR=${empty}/empty XDG_CONFIG_HOME=${empty}/empty BASH_ENV= ENV=`,
      ]);
      expect(socket).toMatch(/^\tForceCommand .*session-wrapper\.ts --socket /);
    },
  });
  ({ dir, home, ada, userId, workspaceId, caId, daemonId, targetId, sshdDir } = world);
  // The block names the agent's sshd folder for the hardened shells.
  expect(emptyDir).toBe(sshdDir);
}, 120_000);

afterAll(async () => {
  await world?.close();
});

describe("plain ssh logins as sessions of the platform", () => {
  let first: Certificate;

  it("registers an exec login before it runs, audits its start and end naming the person and the daemon, with status and bytes", {
    timeout: 60_000,
  }, async () => {
    first = await userCertificate("first");
    const { done } = ssh(first, [], ['echo "session $WAP_SESSION_ID"; head -c 5; exit 3'], "hello");
    const result = await done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(3);
    const sessionId = /^session (\S+)\n/.exec(result.stdout)?.[1] ?? "";
    expect(sessionId).toMatch(uuidPattern);
    expect(result.stdout).toBe(`session ${sessionId}\nhello`);
    const entries = await until(async () => {
      const found = await auditOf(sessionId);
      return found.length === 2 && found;
    });
    expect(entries.map((e) => e.action).sort()).toEqual(["ssh_session.end", "ssh_session.start"]);
    for (const entry of entries) {
      expect(entry.actorType).toBe("daemon");
      expect(entry.actorName).toBe("web-1");
      expect(entry.resourceName).toContain(`Ada Lovelace as ${login} on web-1 (ssh exec `);
      expect(entry.resourceName).toContain("from 127.0.0.1:");
      expect(entry.resourceName).toContain("ended: the login ended (exit 3)");
    }
    const log = await world.agent.waitFor((l) => l.msg === "ssh login ended" && l.sessionId === sessionId, 0);
    expect(log).toMatchObject({ exitStatus: 3, bytesIn: 5 });
    expect(log.bytesOut).toBe(`session ${sessionId}\nhello`.length);
  });

  it("refuses, with a clear message and an audit entry, a command or a shell outside the command list the grant put in the certificate", {
    timeout: 60_000,
  }, async () => {
    // The grant of the login now lists one command; the certificate signed for it carries the list.
    await revoke();
    const from = world.agent.lines.length;
    await ada.principals.addSubjectsToPrincipal({
      workspaceId,
      id: await principalId(),
      subjectIds: [userId],
      type: PrincipalType.USER,
      limits: { commands: ["echo listed"] },
    });
    await world.agent.waitFor((l) => l.msg === "synced", from);
    const identityFile = join(dir, "listed");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "listed", "-f", identityFile]);
    const signed = await ada.certificates.signSSHCertificate({
      workspaceId,
      caId,
      type: SignSSHCertificateRequest_CertificateType.USER,
      publicKey: await readFile(`${identityFile}.pub`, "utf8"),
      targetId,
      login,
    });
    await writeFile(`${identityFile}-cert.pub`, signed.signedCertificate);
    const listed = { identityFile, certificateFile: `${identityFile}-cert.pub`, serial: "" };
    try {
      const allowed = await ssh(listed, [], ["echo listed"]).done;
      expect(allowed).toMatchObject({ code: 0, stdout: "listed\n" });
      const other = await ssh(listed, [], ["id"]).done;
      expect(other.code).not.toBe(0);
      expect(other.stdout).toBe("");
      expect(other.stderr).toContain(
        'the command "id" is not among those this certificate allows (allowed: "echo listed")',
      );
      // A shell (no PTY either: the grant does not allow one).
      const shell = await ssh(listed, ["-T"], [], "id\nexit\n").done;
      expect(shell.code).not.toBe(0);
      expect(shell.stdout).toBe("");
      expect(shell.stderr).toContain("this certificate allows only some commands, not a shell");
      const refusals = await until(async () => {
        const { logs } = await ada.util.listAuditLogs({ workspaceId, limit: 100 });
        const found = logs.filter(
          (l) => l.action === "certificate.use_refused" && l.resource.includes("reason=command_not_allowed"),
        );
        return found.length === 2 && found;
      });
      expect(refusals.map((r) => r.resource.split(" asked=")[1]).sort()).toEqual(['"id"', "a shell"]);
    } finally {
      await revoke();
      await grant();
    }
  });

  it("lists a live login within 2 s with who, from where, what and since when", {
    timeout: 60_000,
  }, async () => {
    const { done } = ssh(first, [], ["sleep 3"]);
    const [listed] = await until(async () => {
      const live = await liveLogins();
      return live.length === 1 && live;
    });
    expect(listed).toMatchObject({
      kind: SessionKind.EXEC,
      command: "sleep 3",
      username: login,
      userId,
      subjectType: "user",
      subjectName: "Ada Lovelace",
      certificateSerial: first.serial,
      tty: false,
    });
    expect(listed!.clientAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(listed!.startedAt).toBeDefined();
    expect((await done).code).toBe(0);
    await until(async () => (await liveLogins()).length === 0);
  });

  it("runs no rc file, ~/.ssh/rc or other shell before the wrapper has registered the login", {
    timeout: 120_000,
  }, async () => {
    const rcLog = join(home, "rc.log");
    const note = (what: string) => `echo "${what}:\${WAP_SESSION_ID:-none}" >> ${rcLog}\n`;
    await writeFile(join(home, ".bashrc"), `${note("bashrc")}exec /bin/echo rc-exec\n`);
    await writeFile(join(home, ".bash_profile"), note("profile"));
    await writeFile(join(home, ".zshenv"), note("zshenv"));
    await writeFile(join(home, ".ssh", "rc"), note("sshrc"));
    await writeFile(join(home, "x"), `${note("rcfile")}exit 0\n`);
    const attempts: [string, string[], string[], string][] = [
      ["exec", [], ["true"], ""],
      ["-T shell", ["-T"], [], "echo typed\nexit\n"],
      [
        "forced tty, another shell",
        ["-o", "RequestTTY=force"],
        ["bash", "--rcfile", join(home, "x")],
        "exit\n",
      ],
      ["-tt shell", ["-tt"], [], "exit\n"],
      ["sftp subsystem", ["-s"], ["sftp"], ""],
    ];
    for (const [name, flags, command, input] of attempts) {
      await writeFile(rcLog, "");
      const from = world.agent.lines.length;
      const { done } = ssh(first, flags, command, input);
      await done;
      const begun = await world.agent.waitFor((l) => l.msg === "ssh login begun", from);
      const ended = await world.agent.waitFor(
        (l) => l.msg === "ssh login ended" && l.sessionId === begun.sessionId,
        from,
      );
      expect(ended.sessionId, name).toBe(begun.sessionId);
      const notes = (await readFile(rcLog, "utf8")).split("\n").filter((l) => l !== "");
      // Whatever ran, ran inside the registered session, after the wrapper.
      for (const line of notes) expect(line, name).toBe(`${line.split(":")[0]}:${begun.sessionId}`);
      expect(
        notes.some((l) => l.startsWith("sshrc")),
        name,
      ).toBe(false);
      if (name === "sftp subsystem") expect(begun.kind).toBe("subsystem");
      if (name === "exec") expect(notes).toContain(`bashrc:${begun.sessionId}`);
    }
    await rm(join(home, ".bashrc"));
  });

  it("ends a live login within 5 s when its grant is removed, and audits why", {
    timeout: 60_000,
  }, async () => {
    const { done } = ssh(first, [], ["sleep 60"]);
    const [live] = await until(async () => {
      const found = await liveLogins();
      return found.length === 1 && found;
    });
    const revokedAt = Date.now();
    await revoke();
    const result = await done;
    const took = Date.now() - revokedAt;
    expect(took).toBeLessThan(5_000);
    expect(result.stderr).toContain(
      "this session was ended: access revoked: the grant to log in as 'wapuser' was removed",
    );
    const end = await until(async () =>
      (await auditOf(live!.sessionId)).find((e) => e.action === "ssh_session.end"),
    );
    expect(end.actorType).toBe("system");
    expect(end.resourceName).toContain("ended: access revoked: the grant to log in as 'wapuser' was removed");
    // And the next login is refused by sshd (the principals file no longer names the subject).
    await world.agent.waitFor(
      (l) => l.msg === "synced" && (l.logins as Record<string, number>)[login] === undefined,
      0,
    );
    expect((await ssh(first, [], ["true"]).done).code).toBe(255);
    await grant();
  });

  it("ends a live login within 5 s when its certificate is revoked", { timeout: 60_000 }, async () => {
    const certificate = await userCertificate("revoked");
    const { done } = ssh(certificate, [], ["sleep 60"]);
    const [live] = await until(async () => {
      const found = await liveLogins();
      return found.length === 1 && found;
    });
    const revokedAt = Date.now();
    await ada.certificates.revokeCertificate({ workspaceId, caId, serial: certificate.serial });
    const result = await done;
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    expect(result.stderr).toContain("access revoked: the certificate was revoked");
    const end = await until(async () =>
      (await auditOf(live!.sessionId)).find((e) => e.action === "ssh_session.end"),
    );
    expect(end.resourceName).toContain("ended: access revoked: the certificate was revoked");
  });

  it("ends a live login when an administrator closes it, saying who ended it", {
    timeout: 60_000,
  }, async () => {
    const { done } = ssh(first, [], ["sleep 60"]);
    const [live] = await until(async () => {
      const found = await liveLogins();
      return found.length === 1 && found;
    });
    await ada.daemons.closeSession({ workspaceId, daemonId, sessionId: live!.sessionId });
    const result = await done;
    // The person logged in reads who ended it.
    expect(result.stderr).toContain("this session was ended: closed from the platform by Ada Lovelace");
    const end = await until(async () =>
      (await auditOf(live!.sessionId)).find((e) => e.action === "ssh_session.end"),
    );
    expect(end.actorId).toBe(userId);
  });

  it("ends a live `wap ssh` login of a service account within 5 s when the service account is deleted", {
    timeout: 90_000,
  }, async () => {
    const { serviceAccount, token } = await ada.serviceAccounts.createServiceAccount({
      workspaceId,
      name: "deployer",
      roleName: "editor",
    });
    const from = world.agent.lines.length;
    await ada.principals.addSubjectsToPrincipal({
      workspaceId,
      id: await principalId(),
      subjectIds: [serviceAccount!.id],
      type: PrincipalType.SERVICE_ACCOUNT,
    });
    await world.agent.waitFor(
      (l) => l.msg === "synced" && (l.logins as Record<string, number>)[login] === 2,
      from,
    );
    const cli = join(process.cwd(), "packages/cli/src/bin.ts");
    const child = spawn(
      process.execPath,
      [
        "--conditions=dev-source",
        "--import",
        "tsx",
        cli,
        "ssh",
        `${login}@web-1`,
        "--",
        "echo",
        "in;",
        "sleep",
        "60",
      ],
      {
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          WAP_CONFIG_DIR: join(dir, "wap-config"),
          WAP_SERVER: world.server.url,
          WAP_TOKEN: token,
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    const [live] = await until(async () => {
      const found = (await liveLogins()).filter((s) => s.userId === serviceAccount!.id);
      return found.length === 1 && stdout.includes("in") && found;
    });
    expect(live).toMatchObject({
      subjectType: "service_account",
      subjectName: "deployer",
      command: "echo in; sleep 60",
    });
    const deletedAt = Date.now();
    await ada.serviceAccounts.deleteServiceAccount({ workspaceId, id: serviceAccount!.id });
    await exited;
    expect(Date.now() - deletedAt).toBeLessThan(5_000);
    // Deleting a service account revokes its certificates too: the first check that fails says so.
    const why = /access revoked: the (certificate was revoked|service account was deleted or expired)/;
    expect(stderr).toMatch(new RegExp(`this session was ended: ${why.source}`));
    const end = await until(async () =>
      (await auditOf(live!.sessionId)).find((e) => e.action === "ssh_session.end"),
    );
    expect(end.resourceName).toMatch(why);
  });

  it("records an interactive login and a command as asciicast v2, in the recordings storage", {
    timeout: 60_000,
  }, async () => {
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { recordSessions: true } });
    await until(
      async () => (await ada.daemons.getDaemon({ workspaceId, id: daemonId })).daemon?.config?.recordSessions,
    );
    const shell = await ssh(first, ["-tt"], [], "echo hello-$((6*7))\nexit 5\n").done;
    expect(shell.code).toBe(5);
    const exec = await ssh(first, [], ["printf 'out\\n'; exit 4"]).done;
    expect(exec.stdout).toBe("out\n");
    const recordings = await until(async () => {
      const { recordings } = await ada.recordings.listRecordings({ workspaceId, limit: 10 });
      const done = recordings.filter((r) => r.complete);
      return done.length >= 2 && done;
    });
    // The list says who, where, when, how long and what kind.
    const listed = recordings.find((r) => r.kind === "exec")!;
    expect(listed).toMatchObject({
      subjectName: "Ada Lovelace",
      daemonName: "web-1",
      username: login,
      command: "printf 'out\\n'; exit 4",
    });
    expect(listed.clientAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(listed.startedAt && listed.endedAt).toBeTruthy();
    expect(recordings.find((r) => r.kind === "shell")).toBeDefined();
    const file = async (id: string) => {
      let text = "";
      for await (const message of ada.recordings.getRecording({ workspaceId, recordingId: id })) {
        if (message.msg.case === "chunk") text += Buffer.from(message.msg.value).toString("utf8");
      }
      return text;
    };
    // asciinema reads them as asciinema files; their structure is checked too.
    for (const r of recordings) expect(await asciinemaCat(await file(r.id))).not.toBe("");
    const parsed = await Promise.all(
      recordings.map(async (r) => {
        const [header, ...events] = (await file(r.id))
          .trimEnd()
          .split("\n")
          .map((l) => JSON.parse(l));
        expect(header).toMatchObject({ version: 2, width: expect.any(Number), height: expect.any(Number) });
        let last = 0;
        for (const event of events) {
          expect(event).toHaveLength(3);
          expect(["o", "r", "m"]).toContain(event[1]);
          expect(event[0]).toBeGreaterThanOrEqual(last);
          last = event[0];
        }
        return { header, events: events as [number, string, string][] };
      }),
    );
    const interactive = parsed.find((p) => p.header.title === "ssh")!;
    expect(
      interactive.events
        .filter((e) => e[1] === "o")
        .map((e) => e[2])
        .join(""),
    ).toContain("hello-42");
    expect(interactive.events.at(-1)).toEqual([expect.any(Number), "m", "exit status 5"]);
    const command = parsed.find((p) => p.header.title === "ssh exec: printf 'out\\n'; exit 4")!;
    expect(
      command.events
        .filter((e) => e[1] === "o")
        .map((e) => e[2])
        .join(""),
    ).toBe("out\n");
    expect(await asciinemaCat(await file(recordings.find((r) => r.kind === "exec")!.id))).toBe("out\n");
    expect(command.events.at(-1)).toEqual([expect.any(Number), "m", "exit status 4"]);
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { recordSessions: false } });
  });

  it("with requireRecording, refuses logins and ends live ones when the agent is gone", {
    timeout: 90_000,
  }, async () => {
    const reloads = world.agent.lines.filter((l) => l.msg === "sshd reloaded").length;
    await ada.daemons.updateDaemon({
      workspaceId,
      id: daemonId,
      config: { recordSessions: false, requireRecording: true },
    });
    await until(async () => (await readFile(join(sshdDir, "login_policy"), "utf8")) === "fail-closed\n");
    // The toggle asked for a plain sync: no new host certificate, no reload.
    expect(world.agent.lines.filter((l) => l.msg === "sshd reloaded")).toHaveLength(reloads);
    const { done } = ssh(first, [], ["sleep 60"]);
    await until(async () => (await liveLogins()).length === 1);
    await world.agent.stop();
    const result = await done;
    expect(result.stderr).toContain("this session was ended: the platform's agent went away");
    const refused = await ssh(first, [], ["true"]).done;
    expect(refused.code).toBe(255);
    expect(refused.stderr).toContain("this login cannot be registered with the platform");
    world.agent = runAgent(world.agentArgs);
    await world.agent.waitFor((l) => l.msg === "synced", 0);
    expect((await ssh(first, [], ["echo back"]).done).stdout).toBe("back\n");
  });

  it("with the control stream cut, follows the daemon's policy: refuses logins when it requires recording, keeps them for later otherwise", {
    timeout: 120_000,
  }, async () => {
    const { port } = world.server;
    const cut = async () => {
      const from = world.agent.lines.length;
      await world.server.close();
      await world.agent.waitFor((l) => l.msg === "control stream ended: reconnecting", from);
    };
    const back = async () => {
      const from = world.agent.lines.length;
      await world.startServer(port);
      await world.agent.waitFor((l) => l.msg === "synced", from);
    };
    // requireRecording is on (the test before): fail closed.
    await cut();
    const refused = await ssh(first, [], ["echo ran"]).done;
    expect(refused.code).toBe(255);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("wap: login refused:");
    await back();
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { requireRecording: false } });
    await until(async () => (await readFile(join(sshdDir, "login_policy"), "utf8")) === "open\n");
    await cut();
    const from = world.agent.lines.length;
    const open = await ssh(first, [], ["echo ran"]).done;
    expect(open.stdout).toBe("ran\n");
    await world.agent.waitFor((l) => l.msg === "ssh login held offline: the server cannot be reached", from);
    await back();
  });

  it("keeps logins made while the control stream is cut on disk, across a restart of the agent, and registers them with their recordings once it is back", {
    timeout: 180_000,
  }, async () => {
    const { port } = world.server;
    const spoolDir = join(dir, "state", "ssh-spool");
    await until(async () => (await readFile(join(sshdDir, "login_policy"), "utf8")) === "open\n");
    let from = world.agent.lines.length;
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { recordSessions: true } });
    await world.agent.waitFor((l) => l.msg === "synced", from);
    // Whatever the login before left in the spool is uploaded and gone.
    await until(async () => (await readdir(spoolDir)).length === 0);
    from = world.agent.lines.length;
    await world.server.close();
    await world.agent.waitFor((l) => l.msg === "control stream ended: reconnecting", from);

    // A command that ends while the server is away...
    const offlineStart = new Date();
    const exec = await ssh(first, [], ["echo ran-offline; exit 7"]).done;
    expect(exec).toMatchObject({ code: 7, stdout: "ran-offline\n" });
    const held = await world.agent.waitFor(
      (l) => l.msg === "ssh login held offline: the server cannot be reached",
      from,
    );
    expect(held.level).toBe("warn");
    const [folder] = await readdir(spoolDir);
    expect((await stat(spoolDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(spoolDir, folder!))).mode & 0o777).toBe(0o700);
    await until(async () => (await readdir(join(spoolDir, folder!))).includes("end.json"));
    for (const file of await readdir(join(spoolDir, folder!))) {
      expect((await stat(join(spoolDir, folder!, file))).mode & 0o777, file).toBe(0o600);
    }
    // ...is still there after the agent restarted, the server still away.
    await world.agent.stop();
    world.agent = runAgent(world.agentArgs);
    await world.agent.waitFor((l) => l.msg === "control stream ended: reconnecting", 0);
    expect(await readdir(spoolDir)).toEqual([folder]);

    // A login that began while the server was away and still runs when it is back.
    const live = ssh(first, [], ["echo begun; sleep 60"]);
    let liveOut = "";
    live.child.stdout!.on("data", (d: Buffer) => {
      liveOut += d.toString("utf8");
    });
    await until(() => liveOut.includes("begun"));
    expect(await readdir(spoolDir)).toHaveLength(2);

    from = world.agent.lines.length;
    const backAt = Date.now();
    await world.startServer(port);
    await world.agent.waitFor((l) => l.msg === "synced", from);
    const listed = await until(async () =>
      (await liveLogins()).find((s) => s.command === "echo begun; sleep 60"),
    );
    expect(listed).toMatchObject({ subjectName: "Ada Lovelace", username: login, kind: SessionKind.EXEC });
    expect(Number(listed.startedAt!.seconds) * 1000).toBeLessThan(backAt);
    // Registered, it is a login like any other: an administrator closes it.
    await ada.daemons.closeSession({ workspaceId, daemonId, sessionId: listed.sessionId });
    const closed = await live.done;
    expect(closed.stderr).toContain("this session was ended: closed from the platform by Ada Lovelace");

    const recordings = await until(async () => {
      const { recordings } = await ada.recordings.listRecordings({ workspaceId, limit: 100 });
      const offline = recordings.filter(
        (r) =>
          r.complete &&
          (r.command === "echo ran-offline; exit 7" || r.command === "echo begun; sleep 60") &&
          Number(r.startedAt!.seconds) >= Math.floor(offlineStart.getTime() / 1000),
      );
      return offline.length === 2 && offline;
    });
    const execRecording = recordings.find((r) => r.command === "echo ran-offline; exit 7")!;
    expect(Number(execRecording.startedAt!.seconds) * 1000).toBeLessThan(backAt);
    const execCast = await castOf(execRecording.id);
    expect(execCast.output).toBe("ran-offline\n");
    expect(execCast.events.at(-1)).toEqual([expect.any(Number), "m", "exit status 7"]);
    expect(await asciinemaCat(execCast.text)).toBe("ran-offline\n");
    const liveCast = await castOf(recordings.find((r) => r.command === "echo begun; sleep 60")!.id);
    expect(liveCast.output).toContain("begun");
    // Both are audited, the command with how it ended while the server was away.
    const entries = await until(async () => {
      const found = await auditOf(execRecording.id);
      return found.length === 2 && found;
    });
    expect(entries.find((e) => e.action === "ssh_session.end")?.resourceName).toContain(
      "ended: the login ended (exit 7)",
    );
    // Uploaded, the spool is empty.
    await until(async () => (await readdir(spoolDir)).length === 0);
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, config: { recordSessions: false } });
  });
});

/** The recording's file: its text, header, events and the output events' text joined. */
async function castOf(recordingId: string) {
  let text = "";
  for await (const message of ada.recordings.getRecording({ workspaceId, recordingId })) {
    if (message.msg.case === "chunk") text += Buffer.from(message.msg.value).toString("utf8");
  }
  const [header, ...events] = text
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  const typed = events as [number, string, string][];
  const output = typed
    .filter((e) => e[1] === "o")
    .map((e) => e[2])
    .join("");
  return { text, header, events: typed, output };
}

/**
 * What `asciinema cat` (Debian's asciinema 2.2) prints of a recording: asciinema itself reads the
 * file, and fails on one it cannot. It opens /dev/tty, so it runs in a terminal of `script`'s.
 */
async function asciinemaCat(cast: string): Promise<string> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.cast`);
  await writeFile(file, cast);
  const { stdout } = await run("script", ["-qec", `asciinema cat ${file}`, "/dev/null"]);
  return stdout;
}

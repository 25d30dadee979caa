/**
 * The agent on a real machine, end to end: a real server (HTTP/2, SQLite), the real `wap-agent`
 * program, and a real OpenSSH sshd whose only authentication settings are the lines
 * `wap-agent sshd-config` prints. Logins are made with the real `ssh` client, whose known_hosts
 * holds nothing but `@cert-authority * <CA key>` (no HostKeyAlias, StrictHostKeyChecking yes).
 *
 * The program runs on Node.js 18.19, Debian 12's nodejs and the oldest the agent supports (the
 * console's and the release's tests run it on the current one).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  CertificateKeyType,
  DaemonStatus,
  PrincipalType,
  SignSSHCertificateRequest_CertificateType,
} from "@wap/api";
import { createPlatformClient, type PlatformClient } from "@wap/client";
import { createArgon2PasswordHasher } from "@wap/core";
import { createServer, type RunningServer, type ServerOptions, silentLogger } from "@wap/server";
import {
  type AgentProcess,
  runAgent as runAgentOn,
  wapAgent as wapAgentOn,
} from "@wap/test-kit/agent-process";
import { oldestNode, oldestNodeVersion } from "@wap/test-kit/oldest-node";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { openTerminal, terminalUrl } from "@wap/test-kit/terminal";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const wapAgent = (args: readonly string[], env: NodeJS.ProcessEnv = {}) =>
  wapAgentOn(args, env, undefined, oldestNode);
const runAgent = (args: readonly string[]) => runAgentOn(args, undefined, oldestNode);

let dir: string;
let server: RunningServer;
let sshd: RunningSshd;
let agent: AgentProcess;
let ada: PlatformClient;
let userId: string;
let workspaceId: string;
let caId: string;
let daemonId: string;
let targetId: string;
let stateDir: string;
let sshdDir: string;

const serverOptions = (port = 0): ServerOptions => ({
  host: "127.0.0.1",
  port,
  dataDir: join(dir, "server"),
  logger: silentLogger,
  rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
  shutdownGraceSeconds: 1,
  platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
});

beforeAll(async () => {
  expect((await run(oldestNode, ["--version"])).stdout.trim()).toBe(oldestNodeVersion);
  dir = await mkdtemp(join(tmpdir(), "wap-agent-test-"));
  stateDir = join(dir, "state");
  sshdDir = join(dir, "sshd");
  server = await createServer(serverOptions());
  ada = createPlatformClient({ baseUrl: server.url });
  await ada.auth.register({
    name: "Ada",
    email: "ada@example.com",
    username: "ada",
    password: "correct horse battery staple",
  });
  await ada.login("ada@example.com", "correct horse battery staple");
  userId = (await ada.users.whoami({})).user!.id;
  workspaceId = (await ada.workspaces.createWorkspace({ name: "Engines" })).workspace!.id;
  caId = (
    await ada.certificates.createCertificateAuthority({
      workspaceId,
      name: "ssh",
      keyType: CertificateKeyType.ED25519,
    })
  ).certificateAuthority!.id;
  const token = (await ada.daemons.refreshEnrollToken({ workspaceId })).token;

  // sshd's only authentication settings are the agent's.
  const config = await wapAgent([
    "sshd-config",
    "--sshd-dir",
    sshdDir,
    "--sessions-socket",
    join(dir, "sessions.sock"),
  ]);
  expect(config.code).toBe(0);
  // The files' lines; the Match block of SSH logins (ssh-sessions.test.ts) is left out here.
  const authConfig = config.stdout.trim().split("\n").slice(0, 4);
  expect(config.stdout).toContain("\nMatch all\n");
  expect(authConfig).toEqual([
    `TrustedUserCAKeys ${sshdDir}/trusted_user_ca_keys`,
    `AuthorizedPrincipalsFile ${sshdDir}/principals/%u`,
    `HostCertificate ${sshdDir}/host_certificate.pub`,
    `RevokedKeys ${sshdDir}/revoked_keys`,
  ]);
  // sshd is told about the revocation list only once it exists (an empty KRL).
  expect((await readFile(join(sshdDir, "revoked_keys"))).subarray(0, 8).toString("latin1")).toBe(
    "SSHKRL\n\0",
  );
  sshd = await startSshd({ authConfig });
  await writeFile(join(dir, "host_key.pub"), `${sshd.hostKeyLine}\n`);

  // Enrolment, through the environment (the token stays out of ps); twice changes nothing.
  const enrolled = await wapAgent(
    ["enroll", "--server", server.url, "--state-dir", stateDir, "--name", "web-1"],
    {
      WAP_ENROLL_TOKEN: token,
    },
  );
  expect(enrolled.stderr).toBe("");
  expect(enrolled.stdout).toMatch(/^enrolled: daemon [0-9a-f-]{36} .*PENDING/);
  const enrolment = JSON.parse(await readFile(join(stateDir, "enrolment.json"), "utf8"));
  daemonId = enrolment.daemonId;
  targetId = enrolment.targetId;
  const again = await wapAgent(["enroll", "--server", server.url, "--state-dir", stateDir, "--token", token]);
  expect(again.stdout).toBe(`already enrolled as daemon ${daemonId}: nothing changed\n`);
  expect((await stat(stateDir)).mode & 0o777).toBe(0o700);
  expect((await stat(join(stateDir, "key.pem"))).mode & 0o777).toBe(0o600);

  agent = runAgent([
    "--state-dir",
    stateDir,
    "--sshd-dir",
    sshdDir,
    "--reload-command",
    `kill -HUP ${sshd.pid}`,
    "--ssh-address",
    `127.0.0.1:${sshd.port}`,
    "--host-key",
    join(dir, "host_key.pub"),
    "--sessions-socket",
    join(dir, "sessions.sock"),
  ]);
});

afterAll(async () => {
  await agent?.stop();
  await sshd?.stop();
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function stat(path: string) {
  return (await import("node:fs/promises")).stat(path);
}

/** Polls `probe` until it gives a truthy value (the test's own timeout bounds the wait). */
async function until<T>(probe: () => T | Promise<T>): Promise<NonNullable<T>> {
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function principalsOnDisk(): Promise<Record<string, string[]>> {
  const names = await readdir(join(sshdDir, "principals")).catch(() => [] as string[]);
  const map: Record<string, string[]> = {};
  for (const name of names.filter((n) => !n.startsWith(".")))
    map[name] = (await readFile(join(sshdDir, "principals", name), "utf8")).trim().split("\n");
  return map;
}

async function userCertificate(name: string): Promise<{ identityFile: string; certificateFile: string }> {
  const identityFile = join(dir, name);
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", identityFile]);
  const res = await ada.certificates.signSSHCertificate({
    workspaceId,
    caId,
    type: SignSSHCertificateRequest_CertificateType.USER,
    publicKey: await readFile(`${identityFile}.pub`, "utf8"),
  });
  const certificateFile = `${identityFile}-cert.pub`;
  await writeFile(certificateFile, res.signedCertificate);
  return { identityFile, certificateFile };
}

/**
 * Logs in, retrying while sshd may still be re-executing after a reload (connection refused) or
 * the agent has not written the latest files yet; the last attempt is returned either way.
 */
async function login(
  certificate: { identityFile: string; certificateFile: string },
  knownHostsLine: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let result = await sshd.ssh({ ...certificate, knownHostsLine, command: "id -un" });
  for (let attempt = 0; result.code !== 0 && attempt < 40; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    result = await sshd.ssh({ ...certificate, knownHostsLine, command: "id -un" });
  }
  return result;
}

async function caKeyLine(): Promise<string> {
  return (await ada.certificates.getCertificateAuthority({ workspaceId, id: caId })).certificateAuthority!
    .publicKey;
}

async function principalId(username: string): Promise<string> {
  await ada.principals.setPrincipals({
    workspaceId,
    targetId,
    usernames: [...new Set([sshd.user, terminalUser, username])],
  });
  const { principals } = await ada.principals.listPrincipals({
    workspaceId,
    targetId,
    limit: 100,
    offset: 0,
  });
  return principals.find((p) => p.username === username)!.id;
}

async function grant(username: string): Promise<void> {
  await ada.principals.addSubjectsToPrincipal({
    workspaceId,
    id: await principalId(username),
    subjectIds: [userId],
    type: PrincipalType.USER,
  });
}

async function revoke(username: string): Promise<void> {
  await ada.principals.removeSubjectsFromPrincipal({
    workspaceId,
    id: await principalId(username),
    subjectIds: [userId],
    type: PrincipalType.USER,
  });
}

/** A local account with a login shell other than root when the machine has one (the shell then runs as someone else). */
let terminalUser = "root";

let firstCertificate: { identityFile: string; certificateFile: string };

describe("wap-agent with a real sshd", () => {
  it("enrols PENDING and writes no principals until it is accepted", async () => {
    const synced = await agent.waitFor((l) => l.msg === "synced", 0);
    expect(synced.status).toBe("PENDING");
    expect(await principalsOnDisk()).toEqual({});
    const daemon = (await ada.daemons.getDaemon({ workspaceId, id: daemonId })).daemon!;
    expect(daemon.status).toBe(DaemonStatus.PENDING);
    expect(existsSync(join(sshdDir, "host_certificate.pub"))).toBe(false);
  });

  it("once accepted and granted, lets the granted user in with plain ssh and an @cert-authority line", {
    timeout: 90_000,
  }, async () => {
    const { stdout } = await run("getent", ["passwd"]);
    terminalUser =
      stdout
        .split("\n")
        .map((l) => l.split(":"))
        .find(
          ([name, , uid, , , , shell]) =>
            name && Number(uid) >= 1000 && Number(uid) < 65534 && /\/(ba|da|z)?sh$/.test(shell ?? ""),
        )?.[0] ?? "root";
    await ada.daemons.updateDaemon({ workspaceId, id: daemonId, status: DaemonStatus.ACCEPTED });
    const signed = await agent.waitFor((l) => l.msg === "host certificate signed", 0);
    // The target id first, then its name and the address ssh is pointed at (and the host name).
    expect((signed.principals as string[])[0]).toBe(targetId);
    expect(signed.principals).toEqual(expect.arrayContaining(["web-1", "127.0.0.1"]));
    await agent.waitFor((l) => l.msg === "sshd reloaded", 0);

    firstCertificate = await userCertificate("ada-1");
    const knownHostsLine = `@cert-authority * ${await caKeyLine()}`;
    // Not granted yet: refused.
    const refused = await sshd.ssh({ ...firstCertificate, knownHostsLine, command: "id -un" });
    expect(refused.code).toBe(255);

    await grant(sshd.user);
    await until(async () => (await principalsOnDisk())[sshd.user]?.includes(userId));
    const granted = await login(firstCertificate, knownHostsLine);
    expect(granted.stderr).not.toMatch(/Permission denied|Host key verification failed/);
    expect(granted.stdout.trim()).toBe(sshd.user);
    expect((await stat(join(sshdDir, "principals", sshd.user))).mode & 0o777).toBe(0o644);
  });

  it("refuses the next login once the grant is removed", async () => {
    await revoke(sshd.user);
    await until(async () => !(await principalsOnDisk())[sshd.user]);
    const refused = await sshd.ssh({
      ...firstCertificate,
      knownHostsLine: `@cert-authority * ${await caKeyLine()}`,
      command: "true",
    });
    expect(refused.code).toBe(255);
    expect(refused.stderr).toMatch(/Permission denied/);
    await grant(sshd.user);
    await until(async () => (await principalsOnDisk())[sshd.user]?.includes(userId));
  });

  it("runs a browser terminal through a pty as the granted local user", async () => {
    if (terminalUser !== sshd.user) await grant(terminalUser);
    await until(async () => (await principalsOnDisk())[terminalUser]?.includes(userId));
    const { session } = await ada.daemons.createSession({ workspaceId, daemonId, username: terminalUser });
    const socket = await openTerminal(terminalUrl(server.url, workspaceId, session!.sessionId), {
      token: ada.tokens.get()!.accessToken,
    });
    socket.resize(100, 30);
    socket.send("id -un; stty size; echo done-$((6*7))\n");
    let text = "";
    while (!text.includes("done-42")) {
      const frame = await socket.nextFrame();
      if (frame.binary) text += frame.data.toString("utf8");
    }
    expect(text).toContain(`${terminalUser}\r\n`);
    expect(text).toContain("30 100");
    socket.close();
    await agent.waitFor((l) => l.msg === "session ended" && l.sessionId === session!.sessionId, 0);
  });

  it("after a CA rollover, certificates of the new key log in and those of the old one still do", {
    timeout: 90_000,
  }, async () => {
    const oldKey = await caKeyLine();
    const from = agent.lines.length;
    await ada.certificates.rolloverCertificateAuthority({ workspaceId, id: caId });
    const newKey = await caKeyLine();
    expect(newKey).not.toBe(oldKey);
    await agent.waitFor(
      (l) => l.msg === "sshd reloaded" && (l.changed as string[]).includes("host_certificate"),
      from,
    );
    const trusted = (await readFile(join(sshdDir, "trusted_user_ca_keys"), "utf8")).trim().split("\n");
    expect(trusted).toEqual([newKey, oldKey]);

    const newCertificate = await userCertificate("ada-2");
    const knownHostsLine = `@cert-authority * ${newKey}`;
    for (const certificate of [newCertificate, firstCertificate]) {
      const result = await login(certificate, knownHostsLine);
      expect(result.stderr).toBe("");
      expect(result.stdout.trim()).toBe(sshd.user);
    }
  });

  it("refuses a revoked certificate at the next login while a fresh one of the same user logs in", {
    timeout: 90_000,
  }, async () => {
    const knownHostsLine = `@cert-authority * ${await caKeyLine()}`;
    const revoked = await userCertificate("ada-3");
    expect((await login(revoked, knownHostsLine)).stdout.trim()).toBe(sshd.user);
    const before = await readFile(join(sshdDir, "revoked_keys"));
    const from = agent.lines.length;
    const fingerprint = (
      await run("ssh-keygen", ["-l", "-E", "sha256", "-f", `${revoked.identityFile}.pub`])
    ).stdout.split(" ")[1]!;
    const { revoked: done } = await ada.certificates.revokeCertificate({
      workspaceId,
      caId,
      keyFingerprint: fingerprint,
    });
    expect(done).toHaveLength(1);
    await agent.waitFor((l) => l.msg === "revocation list written" && l.entries === 1, from);
    const after = await readFile(join(sshdDir, "revoked_keys"));
    expect(after.equals(before)).toBe(false);

    const refused = await sshd.ssh({ ...revoked, knownHostsLine, command: "id -un" });
    expect(refused.code).toBe(255);
    expect(refused.stderr).toMatch(/Permission denied/);
    const fresh = await login(await userCertificate("ada-4"), knownHostsLine);
    expect(fresh.stderr).toBe("");
    expect(fresh.stdout.trim()).toBe(sshd.user);
  });

  it("keeps the files while the server is away, and reconnects when it is back", async () => {
    const before = await principalsOnDisk();
    const revokedKeys = await readFile(join(sshdDir, "revoked_keys"));
    const { port } = server;
    const from = agent.lines.length;
    await server.close();
    await agent.waitFor((l) => l.msg === "control stream ended: reconnecting", from);
    // Logins keep working with what was last granted.
    const offline = await sshd.ssh({
      ...firstCertificate,
      knownHostsLine: `@cert-authority * ${await readFile(join(sshdDir, "trusted_user_ca_keys"), "utf8").then((t) => t.split("\n")[0])}`,
      command: "id -un",
    });
    expect(offline.code).toBe(0);
    expect(await principalsOnDisk()).toEqual(before);
    expect((await readFile(join(sshdDir, "revoked_keys"))).equals(revokedKeys)).toBe(true);
    server = await createServer(serverOptions(port));
    await agent.waitFor((l) => l.msg === "control stream open", from);
    await agent.waitFor((l) => l.msg === "synced", from);
    expect(await principalsOnDisk()).toEqual(before);
  }, 120_000);

  it("exits 3 with a clear message, its logins removed, once its daemon is deleted", async () => {
    const status = await wapAgent(["status", "--state-dir", stateDir, "--sshd-dir", sshdDir]);
    expect(JSON.parse(status.stdout)).toMatchObject({ enrolled: true, daemonId, logins: { [sshd.user]: 1 } });
    await ada.daemons.deleteDaemon({ workspaceId, id: daemonId });
    const exit = await agent.exited;
    expect(exit.code).toBe(3);
    expect(agent.stderr()).toMatch(/refused the agent's key/);
    expect(await principalsOnDisk()).toEqual({});
  });
});

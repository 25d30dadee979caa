/**
 * A machine with the platform's SSH logins in place, as the agent's end-to-end tests need it: a
 * real server (embedded SQLite in a temporary folder), Ada Lovelace owning a workspace with an
 * SSH authority, a real sshd configured with nothing but what `wap-agent sshd-config` prints (its
 * files, then the Match block forcing the session wrapper), the real `wap-agent` enrolled,
 * accepted and running, and Ada granted the login `wapuser`, an account that exists only in
 * sshd's mount namespace (uid 0, bash, a test folder as home).
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
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
import { createServer, type RunningServer, silentLogger } from "@wap/server";
import { type AgentProcess, runAgent, wapAgent } from "./agent-process.js";
import { type RunningSshd, startSshd } from "./sshd.js";

const run = promisify(execFile);

/** The account the logins are made as. */
export const sshLogin = "wapuser";

export interface SshWorldOptions {
  /** The prefix of the temporary folder. */
  readonly name: string;
  /** The daemon's name. */
  readonly daemonName: string;
  /** sshd's `Subsystem sftp` program (a subsystem goes to the forced command as its program). */
  readonly sftpServer?: string;
  /** Lines of sshd_config the test sees before the block is applied: what it prints is checked. */
  readonly checkConfig?: (printed: readonly string[]) => void;
}

/** A user certificate of Ada's, its key and serial. */
export interface SshUserCertificate {
  readonly identityFile: string;
  readonly certificateFile: string;
  readonly serial: string;
}

export interface SshWorld {
  readonly dir: string;
  readonly home: string;
  readonly sshdDir: string;
  readonly socket: string;
  readonly stateDir: string;
  /** The running server; replaced by {@link SshWorld.startServer}. */
  server: RunningServer;
  readonly sshd: RunningSshd;
  /** The running agent; a test that restarts it assigns the new one. */
  agent: AgentProcess;
  /** `wap-agent run` arguments of this machine. */
  readonly agentArgs: readonly string[];
  readonly ada: PlatformClient;
  readonly userId: string;
  readonly workspaceId: string;
  readonly caId: string;
  readonly daemonId: string;
  readonly targetId: string;
  /** Starts the server again on `port` (the same data folder). */
  startServer(port: number): Promise<RunningServer>;
  /** Signs a new key of Ada's as a user certificate, into `<dir>/<name>`. */
  userCertificate(name: string): Promise<SshUserCertificate>;
  /** `ssh`/`sftp`/`scp` options for `certificate`: no config, no agent, no host key checks. */
  clientOptions(certificate: SshUserCertificate, portFlag?: "-p" | "-P"): string[];
  /** Ada granted `wapuser`, once the agent has synced it. */
  grant(): Promise<void>;
  revoke(): Promise<void>;
  principalId(): Promise<string>;
  close(): Promise<void>;
}

/** The environment for the ssh clients: no ssh-agent. */
export function sshClientEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SSH_AUTH_SOCK;
  return env;
}

export async function startSshWorld(options: SshWorldOptions): Promise<SshWorld> {
  const dir = await mkdtemp(join(tmpdir(), `${options.name}-`));
  const home = join(dir, "home");
  const sshdDir = join(dir, "sshd");
  const socket = join(dir, "sessions.sock");
  const stateDir = join(dir, "state");
  await mkdir(join(home, ".ssh"), { recursive: true, mode: 0o755 });
  const startServer = (port: number) =>
    createServer({
      host: "127.0.0.1",
      port,
      dataDir: join(dir, "server"),
      logger: silentLogger,
      rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
      shutdownGraceSeconds: 1,
      platformOptions: { passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }) },
    });
  const server = await startServer(0);
  const ada = createPlatformClient({ baseUrl: server.url });
  await ada.auth.register({
    name: "Ada Lovelace",
    email: "ada@example.com",
    username: "ada",
    password: "correct horse battery staple",
  });
  await ada.login("ada@example.com", "correct horse battery staple");
  const userId = (await ada.users.whoami({})).user!.id;
  const workspaceId = (await ada.workspaces.createWorkspace({ name: "Engines" })).workspace!.id;
  const caId = (
    await ada.certificates.createCertificateAuthority({
      workspaceId,
      name: "ssh",
      keyType: CertificateKeyType.ED25519,
    })
  ).certificateAuthority!.id;
  const token = (await ada.daemons.refreshEnrollToken({ workspaceId })).token;

  const config = await wapAgent(["sshd-config", "--sshd-dir", sshdDir, "--sessions-socket", socket]);
  if (config.code !== 0) throw new Error(`wap-agent sshd-config failed: ${config.stderr}`);
  const lines = config.stdout.trim().split("\n");
  options.checkConfig?.(lines);
  const sshd = await startSshd({
    authConfig: [`Subsystem sftp ${options.sftpServer ?? "/usr/lib/openssh/sftp-server"}`, ...lines],
    passwdLines: [`${sshLogin}:x:0:0:wap test:${home}:/bin/bash`],
  });
  await writeFile(join(dir, "host_key.pub"), `${sshd.hostKeyLine}\n`);
  const enrolled = await wapAgent(
    ["enroll", "--server", server.url, "--state-dir", stateDir, "--name", options.daemonName],
    { WAP_ENROLL_TOKEN: token },
  );
  if (enrolled.code !== 0) throw new Error(`wap-agent enroll failed: ${enrolled.stderr}`);
  const { daemonId, targetId } = JSON.parse(await readFile(join(stateDir, "enrolment.json"), "utf8"));
  const agentArgs = [
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
    socket,
  ];
  const agent = runAgent(agentArgs);

  const world: SshWorld = {
    dir,
    home,
    sshdDir,
    socket,
    stateDir,
    server,
    sshd,
    agent,
    agentArgs,
    ada,
    userId,
    workspaceId,
    caId,
    daemonId,
    targetId,
    async startServer(port) {
      world.server = await startServer(port);
      return world.server;
    },
    async userCertificate(name) {
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
      const { stdout } = await run("ssh-keygen", ["-L", "-f", certificateFile]);
      const serial = /Serial: (\d+)/.exec(stdout)![1]!;
      return { identityFile, certificateFile, serial };
    },
    clientOptions(certificate, portFlag = "-p") {
      return [
        "-F",
        "/dev/null",
        portFlag,
        String(sshd.port),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        `IdentityFile=${certificate.identityFile}`,
        "-o",
        `CertificateFile=${certificate.certificateFile}`,
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
      ];
    },
    async principalId() {
      const { principals } = await ada.principals.listPrincipals({
        workspaceId,
        targetId,
        limit: 100,
        offset: 0,
      });
      return principals.find((p) => p.username === sshLogin)!.id;
    },
    async grant() {
      const from = world.agent.lines.length;
      await ada.principals.addSubjectsToPrincipal({
        workspaceId,
        id: await world.principalId(),
        subjectIds: [userId],
        type: PrincipalType.USER,
      });
      await world.agent.waitFor(
        (l) => l.msg === "synced" && (l.logins as Record<string, number>)[sshLogin] === 1,
        from,
      );
    },
    async revoke() {
      await ada.principals.removeSubjectsFromPrincipal({
        workspaceId,
        id: await world.principalId(),
        subjectIds: [userId],
        type: PrincipalType.USER,
      });
    },
    async close() {
      await world.agent?.stop();
      await sshd.stop();
      await world.server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await agent.waitFor((l) => l.msg === "control stream open", 0);
  await ada.daemons.updateDaemon({ workspaceId, id: daemonId, status: DaemonStatus.ACCEPTED });
  await agent.waitFor((l) => l.msg === "sshd reloaded", 0);
  await ada.principals.setPrincipals({ workspaceId, targetId, usernames: [sshLogin] });
  await world.grant();
  return world;
}

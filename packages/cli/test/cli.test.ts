/**
 * The real `wap` binary, run as a child process against the real server and a real OpenSSH sshd
 * on loopback. The sshd is set up as an agent daemon would set it up: a host certificate signed
 * by the workspace's CA through the daemon's own SignSSHCertificate call, TrustedUserCAKeys from
 * that answer, and AuthorizedPrincipalsFile from the daemon's SyncDaemon principals map. One
 * server and one sshd for the whole file.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, lstat, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { hostname, tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AccessRequestService,
  AuthorityType,
  AuthService,
  CertificateKeyType,
  CertificateService,
  DaemonService,
  DaemonStatus,
  GrantKind,
  InvitationService,
  PrincipalService,
  PrincipalType,
  ServiceAccountService,
  SignSSHCertificateRequest_CertificateType,
  TargetService,
  UserService,
  WorkspaceService,
} from "@wap/api";
import { sshPublicKeyLine } from "@wap/ssh-wire";
import { hasControlCharacters } from "@wap/ssh-wire/forms";
import { bearer, clientFor, transportFor } from "@wap/test-kit/clients";
import { signUp, signUpWithWorkspace } from "@wap/test-kit/http";
import { oldestNode as node18, oldestNodeVersion } from "@wap/test-kit/oldest-node";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { type ControlStream, openControlStream, SignedDaemon } from "@wap/test-kit/signed-daemon";
import { type RunningSshd, startSshd } from "@wap/test-kit/sshd";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
/**
 * The binary, bundled once from source for this file (what `--conditions=dev-source --import tsx`
 * would run, at a fraction of the start-up cost per invocation). It sits one level below
 * package.json, as the published `dist/bin.js` does.
 */
const bin = fileURLToPath(new URL(`../dist/wap-test-${process.pid}.mjs`, import.meta.url));

async function bundleBinary(): Promise<void> {
  await build({
    entryPoints: [fileURLToPath(new URL("../src/bin.ts", import.meta.url))],
    outfile: bin,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node18",
    conditions: ["dev-source"],
    // Bundled CommonJS dependencies call require().
    banner: {
      js: "import { createRequire as wapRequire } from 'node:module'; const require = wapRequire(import.meta.url);",
    },
    logLevel: "error",
  });
}
const login = userInfo().username;

let server: TestServer;
let sshd: RunningSshd;
let control: ControlStream;
let scratch: string;
let owner: Awaited<ReturnType<typeof signUpWithWorkspace>>;
let serviceAccountToken: string;
let serviceAccountId: string;
let targetId: string;
let daemon: SignedDaemon;

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A base environment with nothing of the machine's: no agent, no display, a home of its own. */
function environment(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: scratch, LANG: "C.UTF-8" };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

function startWap(
  args: readonly string[],
  env: Record<string, string | undefined>,
  node = process.execPath,
): ChildProcess {
  return spawn(node, [bin, ...args], {
    env: environment(env),
    cwd: scratch,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function finished(child: ChildProcess): Promise<Result> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const wap = (args: readonly string[], env: Record<string, string | undefined>, node?: string) =>
  finished(startWap(args, env, node));

/** `wap login --no-browser`, approved through VerifyCLILogin with the codes the CLI printed. */
async function signIn(configDir: string, accessToken = owner.accessToken): Promise<Result> {
  const child = startWap(["login", "--server", server.url, "--no-browser"], { WAP_CONFIG_DIR: configDir });
  const done = finished(child);
  let printed = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer | string) => {
      printed += chunk.toString();
      if (printed.includes("Waiting for the sign-in")) resolve();
    });
    child.once("close", () => reject(new Error(`wap login ended early: ${printed}`)));
  });
  const url = /(https?:\/\/\S+\/cli-login\?\S+)/.exec(printed)?.[1];
  expect(url, printed).toBeDefined();
  const loginCode = new URL(url!).searchParams.get("code")!;
  const userCode = /Type this code on the page, then approve: (\S+)/.exec(printed)?.[1] ?? "";
  await clientFor(AuthService, transportFor("connect-json-h1", server.url)).verifyCLILogin(
    { loginCode, userCode },
    bearer(accessToken),
  );
  return done;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "wap-cli-test-"));
  await bundleBinary();
  server = await startTestServer({ daemonKeepaliveSeconds: 3600 });
  owner = await signUpWithWorkspace(server.url, "ada");
  const transport = transportFor("connect-binary-h2", server.url);
  const auth = bearer(owner.accessToken);
  const workspaceId = owner.workspaceId;
  const certificates = clientFor(CertificateService, transport);
  const daemons = clientFor(DaemonService, transport);
  const principals = clientFor(PrincipalService, transport);

  await certificates.createCertificateAuthority(
    { workspaceId, name: "ssh-users", keyType: CertificateKeyType.ED25519 },
    auth,
  );
  await certificates.createCertificateAuthority(
    { workspaceId, name: "tls", keyType: CertificateKeyType.ED25519, authorityType: AuthorityType.X509 },
    auth,
  );
  const { token } = await daemons.refreshEnrollToken({ workspaceId }, auth);
  daemon = new SignedDaemon(server.url, "web-01");
  targetId = (await daemon.enroll(token)).targetId;
  await daemons.updateDaemon({ workspaceId, id: daemon.id!, status: DaemonStatus.ACCEPTED }, auth);

  // Two logins on the target; the owner is granted only the local one.
  await principals.setPrincipals({ workspaceId, targetId, usernames: [login, "deploy"] }, auth);
  const { principals: listed } = await principals.listPrincipals({ workspaceId, targetId, limit: 10 }, auth);
  const local = listed.find((p) => p.username === login)!;
  await principals.addSubjectsToPrincipal(
    { workspaceId, id: local.id, subjectIds: [await whoamiId(auth)], type: PrincipalType.USER },
    auth,
  );
  const created = await clientFor(ServiceAccountService, transport).createServiceAccount(
    { workspaceId, name: "deployer", roleName: "viewer" },
    auth,
  );
  serviceAccountToken = created.token;
  serviceAccountId = created.serviceAccount!.id;
  await principals.addSubjectsToPrincipal(
    {
      workspaceId,
      id: local.id,
      subjectIds: [created.serviceAccount!.id],
      type: PrincipalType.SERVICE_ACCOUNT,
    },
    auth,
  );

  // The daemon's side: a host certificate for its host key, then its principals map for sshd.
  const hostKey = generateKeyPairSync("ed25519");
  const host = await clientFor(CertificateService, daemon.transport).signSSHCertificate({
    workspaceId,
    type: SignSSHCertificateRequest_CertificateType.HOST,
    publicKey: sshPublicKeyLine(hostKey.publicKey),
  });
  const synced = await daemon.daemons.syncDaemon({ users: [login, "deploy"], privateIps: [], metadata: {} });
  sshd = await startSshd({
    trustedUserCaKeys: host.caPublicKey.split("\n"),
    principalsForUser: Object.fromEntries(synced.principals.map((p) => [p.username, p.ids])),
    hostKeyPkcs8: hostKey.privateKey.export({ format: "der", type: "pkcs8" }),
    hostCertificate: host.signedCertificate,
  });
  await daemon.daemons.syncDaemon({
    users: [login, "deploy"],
    privateIps: [`${sshd.host}:${sshd.port}`],
    metadata: {},
  });
  control = await openControlStream(daemon);
}, 120_000);

afterAll(async () => {
  control?.cancel();
  await sshd?.stop();
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await rm(bin, { force: true });
});

async function whoamiId(auth: ReturnType<typeof bearer>): Promise<string> {
  return (await clientFor(UserService, transportFor("connect-binary-h2", server.url)).whoami({}, auth)).user!
    .id;
}

const execFileSyncText = (command: string, args: readonly string[]) =>
  execFileSync(command, args, { encoding: "utf8" });

const mode = async (path: string) => (await stat(path)).mode & 0o777;

describe("wap as a signed-in user", { timeout: 180_000 }, () => {
  let configDir: string;
  const asUser = (args: readonly string[], extra: Record<string, string | undefined> = {}, node?: string) =>
    wap(args, { WAP_CONFIG_DIR: configDir, ...extra }, node);

  beforeAll(async () => {
    configDir = join(scratch, "user-config");
  });

  it("signs in through the device login, keeps its state owner-only, and reports it", async () => {
    const result = await signIn(configDir);
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(result.stdout).toContain(`Signed in to ${server.url} as`);
    expect(await mode(configDir)).toBe(0o700);
    expect(await mode(join(configDir, "config.json"))).toBe(0o600);
    expect(await mode(join(configDir, "device-key.pem"))).toBe(0o600);
    // No token is kept: the device key signs every request.
    expect(await readFile(join(configDir, "config.json"), "utf8")).not.toMatch(
      /accessToken|refreshToken|wapsa_|v4\.public\./,
    );

    // The server lists the device under this machine's name, as a CLI device.
    const config = JSON.parse(await readFile(join(configDir, "config.json"), "utf8"));
    const { devices } = await clientFor(
      UserService,
      transportFor("connect-binary-h2", server.url),
    ).listUserDevices({}, bearer(owner.accessToken));
    expect(devices).toContainEqual(
      expect.objectContaining({ id: config.deviceId, name: hostname(), kind: "cli" }),
    );

    const status = await asUser(["status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      server: server.url,
      signedInWith: "device",
      user: { email: owner.email },
      workspaces: [{ id: owner.workspaceId, current: true }],
    });
  });

  it("lists workspaces, targets (online, with the logins granted) and authorities as JSON", async () => {
    const [workspaces, targets, cas, sessions] = await Promise.all([
      asUser(["workspaces", "--json"]),
      asUser(["targets", "--json"]),
      asUser(["cas", "--json"]),
      asUser(["sessions", "--json"]),
    ]);
    expect(JSON.parse(workspaces.stdout)).toEqual([expect.objectContaining({ id: owner.workspaceId })]);
    expect(JSON.parse(targets.stdout)).toEqual([
      expect.objectContaining({
        id: targetId,
        name: "web-01",
        online: true,
        logins: [login],
        endpoints: [`${sshd.host}:${sshd.port}`],
      }),
    ]);
    expect(
      JSON.parse(cas.stdout)
        .map((ca: { name: string; type: string }) => [ca.name, ca.type])
        .sort(),
    ).toEqual([
      ["ssh-users", "ssh"],
      ["tls", "x509"],
    ]);
    expect(JSON.parse(sessions.stdout)).toEqual([]);
    const table = await asUser(["targets"]);
    expect(table.stdout).toMatch(new RegExp(`web-01\\s+online\\s+${login}`));
  });

  it("wap ssh runs a command through the real ssh, checking the host certificate strictly", async () => {
    const result = await asUser(["ssh", `${login}@web-01`, "--", "echo", "ok"]);
    expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "ok\n" });
    const knownHosts = await readFile(join(configDir, "ssh", `known_hosts-${owner.workspaceId}`), "utf8");
    expect(knownHosts).toMatch(/^@cert-authority \S*web-01\S* ssh-ed25519 /m);
    // Without an agent the key is a file next to its certificate, owner-only.
    const files = await readdir(join(configDir, "ssh"));
    const privateKey = files.find((f) => /^[0-9a-f-]{36}$/.test(f))!;
    expect(await mode(join(configDir, "ssh", privateKey))).toBe(0o600);
    // ssh's exit status is wap's.
    const failing = await asUser(["ssh", "web-01", "--", "exit", "7"]);
    expect(failing.code).toBe(7);
  });

  it("wap ssh with a valid certificate and a fresh answer at hand calls no server; without a certificate it must", async () => {
    // A copy of the signed-in state whose server address leads nowhere: what runs, ran unasked.
    const copy = join(scratch, "cached-config");
    await cp(configDir, copy, { recursive: true });
    const nowhere = "http://127.0.0.1:9";
    for (const file of [join(copy, "config.json"), join(copy, "ssh", "logins.json")]) {
      const state = JSON.parse(await readFile(file, "utf8")) as { server: string };
      expect(state.server).toBe(server.url);
      await writeFile(file, JSON.stringify({ ...state, server: nowhere }));
    }
    const offline = (args: readonly string[]) => wap(args, { WAP_CONFIG_DIR: copy });
    const cached = await offline(["ssh", `${login}@web-01`, "--", "echo", "cached"]);
    expect(cached, `${cached.stderr}\n${sshd.logs()}`).toMatchObject({
      code: 0,
      stdout: "cached\n",
      stderr: "",
    });
    // A login the cache does not hold outright, or no certificate to use: the server is asked.
    const other = await offline(["ssh", "deploy@web-01", "--", "true"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^wap: cannot reach the server at http:\/\/127\.0\.0\.1:9 /);
    for (const file of await readdir(join(copy, "ssh")))
      if (file.endsWith("-cert.pub")) await rm(join(copy, "ssh", file));
    const unsigned = await offline(["ssh", `${login}@web-01`, "--", "true"]);
    expect(unsigned.code).toBe(1);
    expect(unsigned.stderr).toMatch(/^wap: cannot reach the server at http:\/\/127\.0\.0\.1:9 /);
  });

  it("wap ssh signs a certificate for a login whose grant carries limits, and sshd enforces them", async () => {
    const auth = bearer(owner.accessToken);
    const principals = clientFor(PrincipalService, transportFor("connect-binary-h2", server.url));
    const { principals: listed } = await principals.listPrincipals(
      { workspaceId: owner.workspaceId, targetId, limit: 10 },
      auth,
    );
    const local = listed.find((p) => p.username === login)!;
    const me = await whoamiId(auth);
    const grantOwner = (limits?: Record<string, unknown>) =>
      principals.addSubjectsToPrincipal(
        {
          workspaceId: owner.workspaceId,
          id: local.id,
          subjectIds: [me],
          type: PrincipalType.USER,
          ...(limits && { limits }),
        },
        auth,
      );
    const syncSshd = async () => {
      const synced = await daemon.daemons.syncDaemon({
        users: [login, "deploy"],
        privateIps: [],
        metadata: {},
      });
      await sshd.writePrincipals(login, synced.principals.find((p) => p.username === login)?.ids ?? []);
    };
    await grantOwner({ pinClientAddress: true });
    await syncSshd();
    try {
      const result = await asUser(["ssh", `${login}@web-01`, "--", "echo", "limited"]);
      expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "limited\n" });
      const bound = (await readdir(join(configDir, "ssh"))).find((f) =>
        f.endsWith(`.${targetId}.${login}-cert.pub`),
      );
      expect(bound).toBeDefined();
      const { stdout } = await promisify(execFile)("ssh-keygen", [
        "-L",
        "-f",
        join(configDir, "ssh", bound!),
      ]);
      expect(stdout).toMatch(/source-address 127\.0\.0\.1/);
    } finally {
      await grantOwner();
      await syncSshd();
      // The later tests count the authority's own files.
      for (const file of await readdir(join(configDir, "ssh"))) {
        if (file.includes(`.${targetId}.`)) await rm(join(configDir, "ssh", file));
      }
    }
  });

  it("refuses a login that is not granted before ssh runs, naming the logins there are", async () => {
    const before = sshd.logs().length;
    const result = await asUser(["ssh", "deploy@web-01", "--", "echo", "no"]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      `wap: you may not log in as "deploy" on web-01; your logins there: ${login} (e.g. \`wap ssh ${login}@web-01\`)`,
    ]);
    expect(sshd.logs().slice(before)).not.toMatch(/Connection from/);
    const unknown = await asUser(["ssh", "db-9"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no target "db-9" .*\(yours: web-01\)/);
  });

  it("wap config ssh makes plain ssh work, through -F and through an Include, renewing a missing certificate", async () => {
    const result = await asUser(["config", "ssh"]);
    expect(result.code, result.stderr).toBe(0);
    const include = /^\s*(Include .+)$/m.exec(result.stdout)?.[1];
    expect(include).toBe(`Include ${join(configDir, "ssh", "config")}`);
    const config = await readFile(join(configDir, "ssh", "config"), "utf8");
    expect(config).toMatch(
      /^Match originalhost web-01 exec ".* 'cert' 'ssh' .*'--renew-if-under' '300s' '--quiet'"$/m,
    );
    expect(config).toMatch(/^ {2}StrictHostKeyChecking yes$/m);

    const ssh = (file: string) =>
      run("ssh", ["-F", file, "-o", "BatchMode=yes", "web-01", "echo", "plain"], {
        env: environment({ WAP_CONFIG_DIR: configDir }),
      }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    const direct = await ssh(join(configDir, "ssh", "config"));
    expect(direct, `${direct.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "plain\n" });

    // The user's own config includes ours; the certificate is gone and the hook gets a new one.
    const userConfig = join(scratch, "user-ssh-config");
    await writeFile(userConfig, `${include}\n`);
    const certificates = (await readdir(join(configDir, "ssh"))).filter((f) => f.endsWith("-cert.pub"));
    expect(certificates).toHaveLength(1);
    await rm(join(configDir, "ssh", certificates[0]!));
    const included = await ssh(userConfig);
    expect(included, `${included.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "plain\n" });
    expect(await readdir(join(configDir, "ssh"))).toContain(certificates[0]);
  });

  it("with an ssh-agent the key lives only in the agent: no private key file is written", async () => {
    const socket = join(scratch, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", socket], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      await new Promise<void>((resolve, reject) => {
        agent.stdout!.once("data", () => resolve());
        agent.once("error", reject);
      });
      await rm(join(configDir, "ssh"), { recursive: true, force: true });
      const result = await asUser(["ssh", "web-01", "--", "echo", "agent"], { SSH_AUTH_SOCK: socket });
      expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "agent\n" });
      const files = await readdir(join(configDir, "ssh"));
      expect(files.filter((f) => /^[0-9a-f-]{36}$/.test(f))).toEqual([]);
      expect(files.some((f) => f.endsWith("-cert.pub"))).toBe(true);
      const listed = await run("ssh-add", ["-L"], { env: { SSH_AUTH_SOCK: socket } });
      const publicKey = await readFile(
        join(configDir, "ssh", files.find((f) => /^[0-9a-f-]{36}\.pub$/.test(f))!),
        "utf8",
      );
      expect(listed.stdout).toContain(publicKey.split(" ").slice(0, 2).join(" "));
    } finally {
      agent.kill();
    }
  });

  it("wap cert ssh signs an existing key: the certificate logs in to sshd", async () => {
    const keyFile = join(scratch, "id_ed25519");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
    const result = await asUser(["cert", "ssh", "--key", `${keyFile}.pub`, "--ttl", "10m", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const described = JSON.parse(result.stdout);
    expect(described).toMatchObject({ certificateFile: `${keyFile}-cert.pub`, ca: "ssh-users" });
    expect(described.principals).toContain(await whoamiId(bearer(owner.accessToken)));
    const session = await sshd.ssh({
      identityFile: keyFile,
      certificateFile: `${keyFile}-cert.pub`,
      command: "echo mine",
    });
    expect(session, sshd.logs()).toMatchObject({ code: 0, stdout: "mine\n" });
  });

  it("wap cert tls makes a key and CSR for a server certificate; it passes openssl verify", async () => {
    const out = await mkdtemp(join(scratch, "tls-"));
    // A link planted where the key goes: the key replaces it, never lands in what it points to.
    const planted = join(out, "planted");
    await writeFile(planted, "planted\n", { mode: 0o644 });
    await symlink(planted, join(out, "web-01.key"));
    const result = await asUser([
      "cert",
      "tls",
      "--cn",
      "web-01",
      "--san",
      "web-01",
      "--san",
      "127.0.0.1",
      "--usage",
      "server",
      "--out",
      out,
      "--json",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const written = JSON.parse(result.stdout);
    expect(written).toMatchObject({ ca: "tls", certificate: join(out, "web-01.crt") });
    expect(Date.parse(written.expiresAt)).toBeGreaterThan(Date.now());
    expect(await mode(written.key)).toBe(0o600);
    expect((await lstat(written.key)).isFile()).toBe(true);
    expect(await readFile(planted, "utf8")).toBe("planted\n");
    expect(await mode(planted)).toBe(0o644);
    const verified = await run("openssl", ["verify", "-CAfile", written.caChain, written.certificate]);
    expect(verified.stdout).toContain(": OK");
    const text = await run("openssl", ["x509", "-in", written.certificate, "-noout", "-text"]);
    expect(text.stdout).toMatch(/DNS:web-01/);
    expect(text.stdout).toMatch(/IP Address:127\.0\.0\.1/);

    // The same on Node.js 18.19 (Debian 12's), with nothing on stderr: Node 18's warning that
    // Ed25519 in Web Crypto is experimental is left out.
    const out18 = await mkdtemp(join(scratch, "tls18-"));
    const on18 = await asUser(
      ["cert", "tls", "--cn", "web-01", "--usage", "server", "--out", out18, "--json"],
      {},
      node18,
    );
    expect(on18).toMatchObject({ code: 0, stderr: "" });
    const written18 = JSON.parse(on18.stdout);
    expect(
      (await run("openssl", ["verify", "-CAfile", written18.caChain, written18.certificate])).stdout,
    ).toContain(": OK");
  });

  it("wap cert tls without --cn makes a client certificate naming the caller by id, and says so", async () => {
    const out = await mkdtemp(join(scratch, "tls-client-"));
    const result = await asUser(["cert", "tls", "--out", out, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const written = JSON.parse(result.stdout);
    const subject = await run("openssl", ["x509", "-in", written.certificate, "-noout", "-subject"]);
    const cn = /CN\s*=\s*(\S+)/.exec(subject.stdout)?.[1];
    expect(result.stderr).toContain(`CN=${cn} (a client certificate carries the caller's id)`);
    expect(cn).toMatch(/^[0-9a-f-]{36}$/);
    const server = await asUser(["cert", "tls", "--usage", "server", "--out", out]);
    expect(server.code).toBe(2);
    expect(server.stderr).toContain("a server certificate names a host");
  });

  it("wap audit export and verify: the chain verifies offline; an edited file and a deleted row are named", async () => {
    const key = join(scratch, "audit.pem");
    expect(await asUser(["audit", "key", "-o", key])).toMatchObject({ code: 0 });
    expect(await readFile(key, "utf8")).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const all = join(scratch, "audit.json");
    const exported = await asUser(["audit", "export", "-o", all]);
    expect(exported, exported.stderr).toMatchObject({ code: 0 });
    expect((await stat(all)).mode & 0o777).toBe(0o600);
    expect(exported.stdout).toMatch(
      /^Wrote .*audit\.json: entries 1 to \d+ of .* audit chain, 1 checkpoint\(s\)\.\n$/,
    );
    const verified = await asUser(["audit", "verify", all, "--key", key]);
    expect(verified, verified.stderr).toMatchObject({ code: 0 });
    expect(verified.stdout).toMatch(/^OK: entries 1 to \d+ of workspace /);
    // A window verifies on its own, in CSV too.
    const since = new Date(Date.now() - 60_000).toISOString();
    const window = join(scratch, "audit-window.csv");
    expect(
      await asUser(["audit", "export", "--format", "csv", "--since", since, "-o", window]),
    ).toMatchObject({ code: 0 });
    expect(await asUser(["audit", "verify", window, "--key", key])).toMatchObject({ code: 0 });
    // A recording file that no completed recording of the chain has.
    const cast = join(scratch, "session.cast");
    await writeFile(cast, '{"version":2,"width":80,"height":24}\n');
    const foreign = await asUser(["audit", "verify", all, "--key", key, "--recording", cast]);
    expect(foreign.code, foreign.stderr).toBe(1);
    expect(foreign.stdout).toMatch(/^FAILED: recording .*session\.cast matches no completed recording/);
    // One byte of one entry changed in the file.
    const text = await readFile(all, "utf8");
    const line = text.split("\n").find((l) => l.includes('"position":2,'))!;
    const edited = join(scratch, "audit-edited.json");
    await writeFile(edited, text.replace(line, line.replace('"actorType":"user"', '"actorType":"usex"')));
    const failed = await asUser(["audit", "verify", edited, "--key", key]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^FAILED: entry 2 \(.*\) was edited/);
    // A row deleted in the database directly.
    await run("sqlite3", [
      join(server.dataDir, "wap.db"),
      `delete from audit_events where workspace_id = '${owner.workspaceId}' and chain_position = 2`,
    ]);
    const after = join(scratch, "audit-after.json");
    expect(await asUser(["audit", "export", "--json", "-o", after])).toMatchObject({ code: 0 });
    const missing = await asUser(["audit", "verify", after, "--key", key, "--json"]);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ ok: false, problem: "missing", position: 2 });
    expect((await asUser(["audit", "export", "--since", "yesterday", "-o", after])).code).toBe(2);
  });

  it("wap logout removes the device on the server: a copy of its state is refused (exit 3)", async () => {
    const copy = join(scratch, "copied-config");
    await cp(configDir, copy, { recursive: true });
    const result = await asUser(["logout"]);
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(await readdir(configDir)).toEqual([]);
    const refused = await wap(["targets"], { WAP_CONFIG_DIR: copy });
    expect(refused.code).toBe(3);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/no longer signed in .* run `wap login`/);
  });
});

describe("wap for scripts and mistakes", { timeout: 180_000 }, () => {
  it("runs on Node.js 18.19 (Debian 12's): a service account signs in, lists its targets and logs in with ssh", async () => {
    expect((await run(node18, ["--version"])).stdout.trim()).toBe(oldestNodeVersion);
    const env = {
      WAP_CONFIG_DIR: join(scratch, "node18-config"),
      WAP_TOKEN: serviceAccountToken,
      WAP_SERVER: server.url,
    };
    const status = await wap(["status", "--json"], env, node18);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ signedInWith: "token", serviceAccountId });
    const targets = await wap(["targets", "--json"], env, node18);
    expect(JSON.parse(targets.stdout)).toEqual([
      expect.objectContaining({ name: "web-01", logins: [login] }),
    ]);
    const result = await wap(["ssh", "web-01", "--", "echo", "from node 18"], env, node18);
    expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "from node 18\n" });
    // Nothing but the program's own output: no warning of an unsupported or experimental feature.
    expect(status.stderr + targets.stderr + result.stderr).toBe("");
  });

  it("WAP_TOKEN signs in a service account, which reaches the target it was granted", async () => {
    const env = {
      WAP_CONFIG_DIR: join(scratch, "token-config"),
      WAP_TOKEN: serviceAccountToken,
      WAP_SERVER: server.url,
    };
    const status = await wap(["status", "--json"], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ signedInWith: "token", serviceAccountId });
    const targets = await wap(["targets", "--json"], env);
    expect(targets.code, targets.stderr).toBe(0);
    expect(JSON.parse(targets.stdout)).toEqual([
      expect.objectContaining({ name: "web-01", logins: [login] }),
    ]);
    const result = await wap(["ssh", "web-01", "--", "echo", "robot"], env);
    expect(result, `${result.stderr}\n${sshd.logs()}`).toMatchObject({ code: 0, stdout: "robot\n" });
    // The token itself is never written down.
    for (const file of await readdir(env.WAP_CONFIG_DIR, { recursive: true })) {
      const path = join(env.WAP_CONFIG_DIR, file);
      if ((await stat(path)).isFile())
        expect(await readFile(path, "utf8")).not.toContain(serviceAccountToken);
    }
  });

  it("explains in one line, with distinct exit codes: not signed in, unreachable, bad token, no ssh, usage", async () => {
    const empty = join(scratch, "empty-config");
    const notSignedIn = await wap(["targets"], { WAP_CONFIG_DIR: empty });
    expect(notSignedIn.code).toBe(3);
    expect(notSignedIn.stderr).toBe(
      "wap: not signed in: run `wap login --server <url>`, or set WAP_TOKEN and WAP_SERVER for a service account\n",
    );
    const unreachable = await wap(["targets"], {
      WAP_CONFIG_DIR: empty,
      WAP_TOKEN: serviceAccountToken,
      WAP_SERVER: "http://127.0.0.1:9",
    });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^wap: cannot reach the server at http:\/\/127\.0\.0\.1:9 .*\n$/);
    const badToken = await wap(["targets"], {
      WAP_CONFIG_DIR: empty,
      WAP_TOKEN: "wapsa_nope",
      WAP_SERVER: server.url,
    });
    expect(badToken.code).toBe(3);
    const noSsh = await wap(["ssh", "web-01", "--", "true"], {
      WAP_CONFIG_DIR: join(scratch, "token-config"),
      WAP_TOKEN: serviceAccountToken,
      WAP_SERVER: server.url,
      PATH: join(scratch, "no-such-bin"),
    });
    expect(noSsh.code).toBe(1);
    expect(noSsh.stderr).toBe(
      "wap: ssh is not installed: install the OpenSSH client (e.g. `apt-get install openssh-client`)\n",
    );
    const usage = await wap(["cert", "tls", "--usage", "sometimes"], { WAP_CONFIG_DIR: empty });
    expect(usage.code).toBe(2);
    const help = await wap(["ssh", "--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: wap ssh [options] [login@]target [-- command...]");
    for (const result of [notSignedIn, unreachable, badToken, noSsh, usage])
      expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

/**
 * A shared workspace is written by its editors and admins, and every member runs `wap` against
 * it. The server now refuses the review's payloads; rows written before that (here written to
 * the storage directly) still reach the CLI, which must not let them reach ssh or the terminal.
 */
describe("wap facing a hostile workspace", { timeout: 180_000 }, () => {
  let configDir: string;
  let sharedId: string;
  let evilId: string;
  let marker: string;
  const escapes = "\u001b]0;owned\u0007\u001b[2J\u009b31m\u202e";
  const hostileName = () => `x\nHost *\n  ProxyCommand touch ${marker}\n#${escapes}`;
  const hostileEndpoint = () => `-oProxyCommand=touch ${marker}`;
  const asMember = (args: readonly string[]) => wap(args, { WAP_CONFIG_DIR: configDir });
  const storage = () => server.platform.services.storage;
  /** Whether `text` holds a control character other than a line break. */
  const rawControls = (text: string) => hasControlCharacters(text.replaceAll("\n", ""));

  beforeAll(async () => {
    configDir = join(scratch, "member-config");
    marker = join(scratch, "proxy-command-ran");
    const auth = bearer(owner.accessToken);
    const transport = transportFor("connect-binary-h2", server.url);
    const { workspace } = await clientFor(WorkspaceService, transport).createWorkspace(
      { name: "shared" },
      auth,
    );
    sharedId = workspace!.id;
    await clientFor(CertificateService, transport).createCertificateAuthority(
      { workspaceId: sharedId, name: "ssh", keyType: CertificateKeyType.ED25519 },
      auth,
    );
    const { target } = await clientFor(TargetService, transport).createTarget(
      { workspaceId: sharedId, name: "evil", endpoints: ["127.0.0.1:9"] },
      auth,
    );
    evilId = target!.id;
    const principals = clientFor(PrincipalService, transport);
    await principals.setPrincipals({ workspaceId: sharedId, targetId: evilId, usernames: [login] }, auth);
    const { principals: listed } = await principals.listPrincipals(
      { workspaceId: sharedId, targetId: evilId },
      auth,
    );
    await principals.addSubjectsToPrincipal(
      {
        workspaceId: sharedId,
        id: listed[0]!.id,
        subjectIds: [await whoamiId(auth)],
        type: PrincipalType.USER,
      },
      auth,
    );
    const signedIn = await signIn(configDir);
    expect(signedIn.code, signedIn.stderr).toBe(0);
  });

  it("the server refuses the review's endpoint and workspace name, naming the field and the form", async () => {
    const auth = bearer(owner.accessToken);
    const transport = transportFor("connect-binary-h2", server.url);
    const refusal = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
    const endpoint = await refusal(
      clientFor(TargetService, transport).updateTarget(
        { workspaceId: sharedId, id: evilId, endpoints: [hostileEndpoint()] },
        auth,
      ),
    );
    expect(endpoint?.code).toBe(Code.InvalidArgument);
    expect(endpoint?.rawMessage).toBe(
      "invalid request: endpoints.0: must be a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022)",
    );
    const name = await refusal(
      clientFor(WorkspaceService, transport).updateWorkspace(
        { workspaceId: sharedId, name: hostileName() },
        auth,
      ),
    );
    expect(name?.code).toBe(Code.InvalidArgument);
    expect(name?.rawMessage).toMatch(/^invalid request: name: must not contain control characters/);
  });

  it("wap ssh refuses a stored endpoint that ssh would read as an option, and runs nothing", async () => {
    await storage().targets.update(sharedId, evilId, { endpoints: [hostileEndpoint()] }, new Date());
    const result = await asMember(["--workspace", sharedId, "ssh", "evil", "--", "uptime"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `wap: wap will not connect to "evil": its endpoint "${hostileEndpoint()}" is not a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022); ask a workspace administrator to correct the target\n`,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("wap config ssh leaves such a target out, writes the workspace's name as one escaped comment, and ssh -G reads no directive from it", async () => {
    const left = await asMember(["config", "ssh"]);
    expect(left.code, left.stderr).toBe(0);
    expect(left.stderr).toMatch(/^warning: leaving out target "evil" of workspace shared: its endpoint /);

    await storage().targets.update(sharedId, evilId, { endpoints: ["127.0.0.1:9"] }, new Date());
    await storage().workspaces.update(sharedId, { name: hostileName() }, new Date());
    const result = await asMember(["config", "ssh"]);
    expect(result.code, result.stderr).toBe(0);
    const configFile = join(configDir, "ssh", "config");
    const config = await readFile(configFile, "utf8");
    expect(rawControls(config)).toBe(false);
    expect(config).toContain(
      `# evil in x\\x0aHost *\\x0a  ProxyCommand touch ${marker}\\x0a#\\x1b]0;owned\\x07`,
    );
    const settings = async (host: string) => {
      const { stdout } = await run("ssh", ["-G", "-F", configFile, host], {
        env: environment({ WAP_CONFIG_DIR: configDir }),
      });
      return new Map(
        stdout.split("\n").map((line) => [line.split(" ")[0]!, line.slice(line.indexOf(" ") + 1)]),
      );
    };
    for (const host of ["github.com", "evil", "web-01"])
      expect((await settings(host)).has("proxycommand")).toBe(false);
    expect((await settings("evil")).get("hostname")).toBe("127.0.0.1");
    expect((await settings("web-01")).get("hostname")).toBe(sshd.host);
    // A real connection through the config, to a host it does not name, runs nothing either.
    await run(
      "ssh",
      ["-F", configFile, "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "127.0.0.1", "-p", "9", "true"],
      {
        env: environment({ WAP_CONFIG_DIR: configDir }),
      },
    ).catch(() => undefined);
    expect(existsSync(marker)).toBe(false);
  });

  it("prints names with escape sequences escaped, in tables and errors; --json keeps them exact", async () => {
    const table = await asMember(["workspaces"]);
    expect(table.code, table.stderr).toBe(0);
    expect(rawControls(table.stdout)).toBe(false);
    expect(table.stdout).toContain("x\\x0aHost *\\x0a");
    expect(table.stdout).toContain("\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u{202e}");
    expect(table.stdout.trim().split("\n")).toHaveLength(3);

    const json = await asMember(["workspaces", "--json"]);
    expect(rawControls(json.stdout)).toBe(false);
    expect(JSON.parse(json.stdout).map((w: { name: string }) => w.name)).toContain(hostileName());

    // A name inside a sentence stays on the sentence's line.
    const used = await asMember(["workspace", "use", sharedId]);
    expect(used.code, used.stderr).toBe(0);
    expect(used.stdout).toBe(
      `Now using workspace x\\x0aHost *\\x0a  ProxyCommand touch ${marker}\\x0a#\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u{202e}.\n`,
    );

    const error = await asMember(["--workspace", "nope", "targets"]);
    expect(error.code).toBe(1);
    expect(rawControls(error.stderr)).toBe(false);
    expect(error.stderr.endsWith("\n")).toBe(true);
    expect(error.stderr.trim().split("\n")).toHaveLength(1);
    expect(error.stderr).toContain("\\x1b]0;owned\\x07");
  });
});

describe("wap for just-in-time access", { timeout: 180_000 }, () => {
  it("a login held on request: wap ssh says how to ask; wap request, refused self-approval, wap approve by another, then ssh logs in; a certificate of an ended or other request is never reused", async () => {
    const transport = transportFor("connect-binary-h2", server.url);
    const auth = bearer(owner.accessToken);
    const workspaceId = owner.workspaceId;
    // Bob joins Ada's workspace and holds the local login only on request, approved by owners.
    const bob = await signUp(server.url, "bob");
    const { link } = await clientFor(InvitationService, transport).refreshInviteToken({ workspaceId }, auth);
    await clientFor(InvitationService, transport).acceptInvitation(
      { token: link.slice(link.lastIndexOf("/") + 1) },
      bearer(bob.accessToken),
    );
    const bobId = await whoamiId(bearer(bob.accessToken));
    const principals = clientFor(PrincipalService, transport);
    const { principals: listed } = await principals.listPrincipals(
      { workspaceId, targetId, limit: 10 },
      auth,
    );
    await principals.addSubjectsToPrincipal(
      {
        workspaceId,
        id: listed.find((p) => p.username === login)!.id,
        subjectIds: [bobId],
        type: PrincipalType.USER,
        kind: GrantKind.ON_REQUEST,
        approval: { maxDuration: { seconds: 3600n, nanos: 0 }, approverRoles: ["owner"] },
      },
      auth,
    );
    const bobConfig = join(scratch, "bob-config");
    const adaConfig = join(scratch, "ada-jit-config");
    expect((await signIn(bobConfig, bob.accessToken)).code).toBe(0);
    expect((await signIn(adaConfig)).code).toBe(0);
    const asBob = (args: readonly string[]) =>
      wap(["--workspace", workspaceId, ...args], { WAP_CONFIG_DIR: bobConfig });
    const asAda = (args: readonly string[]) =>
      wap(["--workspace", workspaceId, ...args], { WAP_CONFIG_DIR: adaConfig });
    /** The agent's side: sync and write the login's principals for sshd. */
    const syncAgent = async () => {
      const synced = await daemon.daemons.syncDaemon({
        users: [login, "deploy"],
        privateIps: [`${sshd.host}:${sshd.port}`],
        metadata: {},
      });
      await sshd.writePrincipals(login, synced.principals.find((p) => p.username === login)?.ids ?? []);
    };

    const refused = await asBob(["ssh", `${login}@web-01`, "--", "echo", "in"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("needs an approved access request");
    expect(refused.stderr).toContain("wap ssh --request");

    const asked = await asBob([
      "--json",
      "request",
      "web-01",
      "--login",
      login,
      "--duration",
      "10m",
      "--reason",
      "fix the build",
      "--no-wait",
    ]);
    expect(asked.code, asked.stderr).toBe(0);
    const request = JSON.parse(asked.stdout) as { id: string; state: string; reason: string };
    expect(request).toMatchObject({ state: "pending", reason: "fix the build" });
    expect(asked.stderr).toContain(request.id);

    const self = await asBob(["approve", request.id]);
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/own access request/);

    const pending = await asAda(["requests"]);
    expect(pending.stdout).toContain(request.id);
    expect(pending.stdout).toContain("fix the build");

    const approved = await asAda(["approve", request.id, "--reason", "ok"]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`Request ${request.id} is approved until`);
    // The agent's next sync lets Bob in: no wait between the approval and the login.
    await syncAgent();
    const inside = await asBob(["ssh", `${login}@web-01`, "--", "echo", "in"]);
    expect(inside.stdout.trim(), inside.stderr).toBe("in");

    // The certificate is the request's own, kept apart: its key id names the request, and the
    // next login reuses it.
    const sshDir = join(bobConfig, "ssh");
    const keyId = (file: string) =>
      /Key ID: "([^"]*)"/.exec(execFileSyncText("ssh-keygen", ["-L", "-f", join(sshDir, file)]))?.[1] ?? "";
    const certOf = async (id: string) =>
      (await readdir(sshDir)).find((f) => f.endsWith(`-request-${id}-cert.pub`));
    const bound = (await certOf(request.id))!;
    expect(bound).toBeDefined();
    expect(keyId(bound)).toMatch(new RegExp(`:request:${request.id}$`));
    const issued = await readFile(join(sshDir, bound), "utf8");
    expect((await asBob(["ssh", `${login}@web-01`, "--", "echo", "in"])).stdout.trim()).toBe("in");
    expect(await readFile(join(sshDir, bound), "utf8")).toBe(issued);

    // Withdrawn: wap ssh stops before ssh runs, and refuses to be pointed at it.
    await clientFor(AccessRequestService, transport).withdrawAccessRequest(
      { workspaceId, id: request.id, reason: "done" },
      auth,
    );
    await syncAgent();
    const ended = await asBob(["ssh", `${login}@web-01`, "--", "echo", "in"]);
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain("needs an approved access request");
    const named = await asBob(["ssh", "--use-request", request.id, `${login}@web-01`, "--", "echo", "in"]);
    expect(named.code).toBe(1);
    expect(named.stderr).toContain(`request ${request.id} is not an approved request of yours`);

    // A new request, approved. A copy of the withdrawn request's key and certificate where the
    // new request's go (a stale or planted file) is not used: a certificate naming the new
    // request is issued, and the login works.
    const again = await asBob([
      "--json",
      "request",
      "web-01",
      "--login",
      login,
      "--duration",
      "10m",
      "--reason",
      "one more fix",
      "--no-wait",
    ]);
    const second = JSON.parse(again.stdout) as { id: string };
    expect((await asAda(["approve", second.id])).code).toBe(0);
    await syncAgent();
    const stale = bound.replace(`-request-${request.id}-cert.pub`, `-request-${second.id}`);
    const old = bound.replace("-cert.pub", "");
    await cp(join(sshDir, old), join(sshDir, stale));
    await cp(join(sshDir, `${old}.pub`), join(sshDir, `${stale}.pub`));
    await cp(join(sshDir, bound), join(sshDir, `${stale}-cert.pub`));
    const fresh = await asBob(["ssh", "--use-request", second.id, `${login}@web-01`, "--", "echo", "in"]);
    expect(fresh.stdout.trim(), fresh.stderr).toBe("in");
    expect(keyId(`${stale}-cert.pub`)).toMatch(new RegExp(`:request:${second.id}$`));
    expect(await readFile(join(sshDir, `${stale}-cert.pub`), "utf8")).not.toBe(issued);
    // The withdrawn request's key and certificate are gone.
    expect((await readdir(sshDir)).filter((f) => f.includes(request.id))).toEqual([]);
  });
});

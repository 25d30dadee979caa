/**
 * @wap/server as a user installs it: the workspace packages are packed into tarballs (`pnpm
 * pack`, which turns `workspace:*` into versions and, for @wap/server, puts the web console's
 * build in the package), installed with npm into an empty directory, and the installed
 * `wap-server` starts, answers REST and Connect calls and serves the console.
 *
 * Slow parts are done once or not at all: the packages are built only when a build is missing or
 * older than its sources (CI builds them just before, in `pnpm check:packages`), and
 * better-sqlite3's install script finds the addon this repository's own install compiled for the
 * same Node as a local prebuilt binary, instead of compiling SQLite again (minutes on a small
 * machine). One run, one server.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../../..");
/** @wap/server and the workspace packages it depends on. */
const packages = ["api", "core", "storage-sql", "storage-sqlite", "storage-postgres", "server"];
const run = promisify(execFile);
const sqliteDriver = "better-sqlite3";
const minutes = 60_000;

describe("the packed @wap/server", () => {
  let work: string | undefined;
  let server: ChildProcess | undefined;
  afterAll(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve));
      server.kill("SIGKILL");
      await exited;
    }
    if (work) await rm(work, { recursive: true, force: true });
  });

  it(
    "installs from its tarballs with npm into an empty directory, serves the API and the console",
    async () => {
      work = await mkdtemp(join(tmpdir(), "wap-pack-"));
      const tarballs = join(work, "tarballs");
      const prebuilds = join(work, "prebuilds");
      const app = join(work, "app");
      await Promise.all([mkdir(tarballs), mkdir(prebuilds), mkdir(app)]);

      const stale = packages.filter((name) => !builtFromCurrentSources(join(repoRoot, "packages", name)));
      if (stale.length > 0) {
        const filters = stale.flatMap((p) => ["--filter", `./packages/${p}`]);
        // Unsorted, as `pnpm build`: each build reads its workspace dependencies from source, and the
        // private test kit makes the dev dependency graph a cycle pnpm will not order.
        await run("pnpm", ["-r", "--no-sort", ...filters, "run", "build"], {
          cwd: repoRoot,
          maxBuffer: 64 << 20,
        });
      }
      await Promise.all(
        packages.map((name) =>
          run("pnpm", ["pack", "--pack-destination", tarballs], {
            cwd: join(repoRoot, "packages", name),
            maxBuffer: 64 << 20,
          }),
        ),
      );
      const packed = readdirSync(tarballs).filter((f) => f.endsWith(".tgz"));
      expect(packed).toHaveLength(packages.length);

      const sqlite = await localPrebuild(prebuilds);
      const npmEnv = {
        ...process.env,
        [`npm_config_${sqlite.name.replace(/[^a-zA-Z0-9]/g, "_")}_local_prebuilds`]: prebuilds,
        // Should the prebuilt addon not fit after all, the fallback compiles against these headers.
        ...(existsSync("/usr/include/node/node.h") && { npm_config_nodedir: "/usr" }),
      };
      await run("npm", ["init", "-y"], { cwd: app, env: npmEnv });
      await run(
        "npm",
        [
          "install",
          "--omit=dev",
          "--no-audit",
          "--no-fund",
          "--prefer-offline",
          ...packed.map((f) => join(tarballs, f)),
        ],
        { cwd: app, env: npmEnv, maxBuffer: 64 << 20 },
      );
      const installed = join(app, "node_modules", "@wap", "server");
      expect(existsSync(join(installed, "console", "index.html"))).toBe(true);
      const bin = join(app, "node_modules", ".bin", "wap-server");
      expect(existsSync(bin)).toBe(true);

      const version = await run(bin, ["--version"], { cwd: app });
      expect(version.stdout).toMatch(/^wap-server \d+\.\d+\.\d+/);

      const started = spawn(bin, [], {
        cwd: app,
        env: { ...process.env, WAP_PORT: "0", WAP_DATA_DIR: join(work, "data"), WAP_LOG_LEVEL: "info" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      server = started;
      const url = await listeningUrl(started);
      try {
        expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
        const account = {
          name: "Packed",
          email: "packed@example.com",
          username: "packed",
          password: "correct horse battery staple",
        };
        const registered = await fetch(`${url}/v1/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(account),
        });
        expect(registered.status).toBe(200);
        // A Connect call: the better-sqlite3 addon and the installed dependencies at work.
        const login = await fetch(`${url}/platform.v1.AuthService/Login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email: account.email, password: account.password }),
        });
        expect(login.status).toBe(200);
        expect(((await login.json()) as { accessToken?: unknown }).accessToken).toEqual(expect.any(String));
        // The generated OpenAPI document ships in the package.
        expect((await fetch(`${url}/openapi.json`)).status).toBe(200);

        // The console, from the copy in the package, with its scripts.
        const page = await fetch(`${url}/`);
        expect(page.status).toBe(200);
        expect(page.headers.get("content-type")).toMatch(/^text\/html/);
        const html = await page.text();
        const script = /<script[^>]+src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
        expect(script).toBeDefined();
        const asset = await fetch(`${url}${script}`);
        expect(asset.status).toBe(200);
        expect(asset.headers.get("content-type")).toMatch(/^text\/javascript/);
      } finally {
        const exited = new Promise((resolve) => started.once("exit", resolve));
        started.kill("SIGTERM");
        expect(await exited).toBe(0);
      }
    },
    15 * minutes,
  );
});

/** Whether `dir`'s dist/ is at least as new as everything it is built from. */
function builtFromCurrentSources(dir: string): boolean {
  const built = oldest(join(dir, "dist"));
  if (built === undefined) return false;
  const inputs = ["src", "package.json", "tsup.config.ts", "tsconfig.json"].map((p) => join(dir, p));
  return inputs.every((input) => (newest(input) ?? 0) <= built);
}

function newest(path: string): number | undefined {
  return walk(path, Math.max);
}

function oldest(path: string): number | undefined {
  return walk(path, Math.min);
}

/** Folds the modification times of the files under `path`; undefined when there are none. */
function walk(path: string, pick: (a: number, b: number) => number): number | undefined {
  if (!existsSync(path)) return undefined;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let result: number | undefined;
  for (const entry of readdirSync(path)) {
    const found = walk(join(path, entry), pick);
    if (found !== undefined) result = result === undefined ? found : pick(result, found);
  }
  return result;
}

/**
 * Puts the better-sqlite3 addon the workspace's install compiled into `dir` as the prebuilt
 * binary prebuild-install looks for (`<name>-v<version>-node-v<abi>-<platform>-<arch>.tar.gz`).
 */
async function localPrebuild(dir: string): Promise<{ name: string }> {
  // @wap/storage-sqlite's driver, resolved from there (this package does not depend on it).
  const require = createRequire(join(repoRoot, "packages", "storage-sqlite", "package.json"));
  const manifestPath = require.resolve(`${sqliteDriver}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { name: string; version: string };
  const addon = join("build", "Release", "better_sqlite3.node");
  expect(existsSync(join(dirname(manifestPath), addon))).toBe(true);
  const file = `${manifest.name}-v${manifest.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run("tar", ["-czf", join(dir, file), "-C", dirname(manifestPath), addon]);
  return { name: manifest.name };
}

/** The URL of the `listening` log line; rejects if the server exits first. */
function listeningUrl(server: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((l) => l.includes('"msg":"listening"'));
      if (line) resolve(JSON.parse(line).url as string);
    };
    server.stdout?.on("data", onData);
    server.stderr?.on("data", onData);
    server.once("exit", (code) => reject(new Error(`wap-server exited (${code}):\n${output}`)));
  });
}

/**
 * @wap/server as a user installs it: the workspace packages are built and packed into tarballs
 * (`pnpm pack`, which turns `workspace:*` into versions), installed with npm into an empty
 * directory, and the installed `wap-server` starts and answers. Slow (a build, an npm install
 * that compiles better-sqlite3): one run, one server.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../../..");
/** @wap/server and the workspace packages it depends on. */
const packages = ["api", "core", "storage-sql", "storage-sqlite", "storage-postgres", "server"];
const run = promisify(execFile);
const minutes = 60_000;

describe("the packed @wap/server", () => {
  let work: string;
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it(
    "installs from its tarballs with npm into an empty directory and serves",
    async () => {
      work = await mkdtemp(join(tmpdir(), "wap-pack-"));
      const tarballs = join(work, "tarballs");
      const app = join(work, "app");
      await mkdir(tarballs);
      await mkdir(app);

      const filters = packages.flatMap((p) => ["--filter", `./packages/${p}`]);
      await run("pnpm", ["-r", "--no-sort", ...filters, "run", "build"], {
        cwd: repoRoot,
        maxBuffer: 64 << 20,
      });
      for (const name of packages) {
        await run("pnpm", ["pack", "--pack-destination", tarballs], {
          cwd: join(repoRoot, "packages", name),
        });
      }
      const packed = (await readdir(tarballs)).filter((f) => f.endsWith(".tgz"));
      expect(packed).toHaveLength(packages.length);

      // better-sqlite3 compiles against the machine's Node headers when no prebuilt binary fits.
      const npmEnv = {
        ...process.env,
        ...(existsSync("/usr/include/node/node.h") && { npm_config_nodedir: "/usr" }),
      };
      await run("npm", ["init", "-y"], { cwd: app, env: npmEnv });
      await run(
        "npm",
        ["install", "--omit=dev", "--no-audit", "--no-fund", ...packed.map((f) => join(tarballs, f))],
        { cwd: app, env: npmEnv, maxBuffer: 64 << 20 },
      );
      const bin = join(app, "node_modules", ".bin", "wap-server");
      expect(existsSync(bin)).toBe(true);

      const version = await run(bin, ["--version"], { cwd: app });
      expect(version.stdout).toMatch(/^wap-server \d+\.\d+\.\d+/);

      const server = spawn(bin, [], {
        cwd: app,
        env: { ...process.env, WAP_PORT: "0", WAP_DATA_DIR: join(work, "data"), WAP_LOG_LEVEL: "info" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let output = "";
          const onData = (chunk: Buffer) => {
            output += chunk.toString();
            const line = output.split("\n").find((l) => l.includes('"msg":"listening"'));
            if (line) resolve(JSON.parse(line).url as string);
          };
          server.stdout.on("data", onData);
          server.stderr.on("data", onData);
          server.once("exit", (code) => reject(new Error(`wap-server exited (${code}):\n${output}`)));
        });
        expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
        const registered = await fetch(`${url}/v1/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            name: "Packed",
            email: "packed@example.com",
            username: "packed",
            password: "correct horse battery staple",
          }),
        });
        expect(registered.status).toBe(200);
        // The generated OpenAPI document ships in the package.
        expect((await fetch(`${url}/openapi.json`)).status).toBe(200);
      } finally {
        const exited = new Promise((resolve) => server.once("exit", resolve));
        server.kill("SIGTERM");
        await exited;
      }
    },
    20 * minutes,
  );
});

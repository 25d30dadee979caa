/**
 * The `wap-server` binary, run from source as documented:
 * `node --import tsx packages/server/src/bin.ts` from the repository root.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { restCall } from "@wap/test-kit/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../../..");
const bin = "packages/server/src/bin.ts";
const run = promisify(execFile);

interface Started {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
}

function start(args: string[], env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, ["--import", "tsx", bin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((l) => l.includes('"msg":"listening"'));
      if (line) resolve({ child, url: JSON.parse(line).url, output: () => output });
    };
    child.stderr?.on("data", onData);
    child.stdout?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`wap-server exited with ${code}:\n${output}`)));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.kill("SIGTERM");
  });
}

describe("wap-server", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "wap-bin-"));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("prints --help", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", bin, "--help"], { cwd: repoRoot });
    expect(stdout).toContain("Usage: wap-server [command] [options]");
    expect(stdout).toContain("WAP_DATABASE_URL");
    expect(stdout).toContain("WAP_DATABASE_POOL_SIZE");
    expect(stdout).toMatch(/migrate\s+Bring the database schema up to date/);
    expect(stdout).toMatch(/master-key\s+Print a new random master key/);
  });

  it("prints a fresh 32-byte master key each time", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", bin, "master-key"], { cwd: repoRoot });
    const { stdout: other } = await run(process.execPath, ["--import", "tsx", bin, "master-key"], {
      cwd: repoRoot,
    });
    expect(Buffer.from(stdout.trim(), "base64")).toHaveLength(32);
    expect(other).not.toBe(stdout);
  });

  it("migrates and exits", async () => {
    const { stderr } = await run(process.execPath, ["--import", "tsx", bin, "migrate"], {
      cwd: repoRoot,
      env: { ...process.env, WAP_DATA_DIR: join(dataDir, "migrated") },
    });
    expect(stderr).toContain("database schema is up to date");
    await stat(join(dataDir, "migrated", "wap.db"));
  });

  it("refuses an unknown command", async () => {
    const failed = await run(process.execPath, ["--import", "tsx", bin, "serve-all"], { cwd: repoRoot }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('unknown command "serve-all"');
  });

  it("refuses a bad setting with a clear message and exit code 2", async () => {
    const failed = await run(process.execPath, ["--import", "tsx", bin, "--port", "eighty"], {
      cwd: repoRoot,
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain("--port must be a whole number");
  });

  it("on PostgreSQL, needs the shared master key and says how to make one", async () => {
    const failed = await run(
      process.execPath,
      ["--import", "tsx", bin, "--port", "0", "--data-dir", join(dataDir, "no-key")],
      {
        cwd: repoRoot,
        env: { ...process.env, WAP_DATABASE_URL: "postgres://wap:hunter2@127.0.0.1:1/wap" },
      },
    ).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain("every instance over one PostgreSQL database must use the same one");
    expect(failed?.stderr).toContain("wap-server master-key");
    expect(failed?.stderr).not.toContain("hunter2");
  });

  it("says which PostgreSQL it cannot reach, without the password", async () => {
    const failed = await run(process.execPath, ["--import", "tsx", bin, "--port", "0"], {
      cwd: repoRoot,
      env: {
        ...process.env,
        WAP_DATABASE_URL: "postgres://wap:hunter2@127.0.0.1:1/wap",
        WAP_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"),
      },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain("cannot use PostgreSQL at 127.0.0.1:1/wap");
    expect(failed?.stderr).toContain("ECONNREFUSED");
    expect(failed?.stderr).not.toContain("hunter2");
  });

  it("starts on embedded SQLite, generates the master key once, keeps data across restarts", async () => {
    const first = await start(["--port", "0", "--log-level", "info"], { WAP_DATA_DIR: dataDir });
    const health = await restCall(first.url, "GET", "/healthz");
    expect(health.body).toEqual({ status: "ok" });
    const account = {
      name: "Bin User",
      email: "bin@example.com",
      username: "binuser",
      password: "long enough pw",
    };
    expect((await restCall(first.url, "POST", "/v1/register", account)).status).toBe(200);
    expect(await stop(first.child)).toBe(0);
    expect(first.output()).toContain("generated a new master key");
    expect((await stat(join(dataDir, "master.key"))).mode & 0o777).toBe(0o600);

    const second = await start(["--port", "0", "--data-dir", dataDir]);
    const login = await restCall(second.url, "POST", "/v1/login", {
      email: account.email,
      password: account.password,
    });
    expect(login.status).toBe(200);
    expect(await stop(second.child)).toBe(0);
    expect(second.output()).not.toContain("generated a new master key");
    // The request log has no secret in it.
    expect(first.output() + second.output()).not.toMatch(/long enough pw|v4\.public|wapr_/);
  });
});

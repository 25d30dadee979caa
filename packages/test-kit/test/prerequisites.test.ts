/**
 * The test prerequisites step, run as `pnpm test` and `.ci/run` run it: a program missing from PATH
 * is named with its Debian package; a user who may not install stops at once with the command to
 * run, before any test.
 */
import { execFile } from "node:child_process";
import { chmod, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCommand, missingPrerequisites, PREREQUISITES } from "../src/prerequisites.js";

const repoRoot = resolve(import.meta.dirname, "../../..");
const nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];

/** A PATH with every program of /usr/bin and /usr/sbin but `left out`. */
async function pathWithout(leftOut: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wap-path-"));
  await chmod(dir, 0o755);
  for (const source of ["/usr/bin", "/usr/sbin"]) {
    for (const name of await readdir(source)) {
      if (name === leftOut) continue;
      await symlink(join(source, name), join(dir, name)).catch(() => undefined);
    }
  }
  return dir;
}

function run(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(file, args, { cwd: repoRoot, env, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      done({ code, output: stdout + stderr });
    });
  });
}

let farm: string;
beforeAll(async () => {
  farm = await pathWithout("chromium");
});
afterAll(async () => {
  await rm(farm, { recursive: true, force: true });
});

describe("test prerequisites", () => {
  it("names the Debian package of a program missing from PATH, and only that one", async () => {
    const missing = await missingPrerequisites(farm);
    expect(missing.map((p) => p.debianPackage)).toEqual(["chromium"]);
    expect(await missingPrerequisites(`${farm}:/usr/bin`)).toEqual([]);
  });

  it("lists each Debian package once, with the reason a test needs it", () => {
    const packages = PREREQUISITES.map((p) => p.debianPackage);
    expect(new Set(packages).size).toBe(packages.length);
    for (const p of PREREQUISITES) expect(p.why.length).toBeGreaterThan(10);
    expect(installCommand(["chromium", "curl"])).toBe(
      "apt-get update && apt-get install -y --no-install-recommends chromium curl",
    );
  });

  it("--check says which package it would install and installs nothing", async () => {
    const { code, output } = await run(
      process.execPath,
      ["--import", "tsx", "scripts/test-prerequisites.ts", "--check"],
      { ...process.env, PATH: farm },
    );
    expect(code).toBe(1);
    expect(output).toContain("chromium: chromium, because the console's browser tests");
    expect(output).toContain(
      "Would run, as root:\n  apt-get update && apt-get install -y --no-install-recommends chromium\n",
    );
  });

  it("as a user who may not install, prints the command and exits non-zero", async () => {
    const { code, output } = await run(
      "setpriv",
      [...nobody, process.execPath, "--import", "tsx", "scripts/test-prerequisites.ts"],
      { PATH: farm, HOME: "/tmp" },
    );
    expect(code).toBe(1);
    expect(output).toContain("Installing them needs root");
    expect(output).toContain("apt-get update && apt-get install -y --no-install-recommends chromium");
  });

  it("stops `pnpm test` as such a user before any test runs", async () => {
    const { code, output } = await run(
      "setpriv",
      [
        ...nobody,
        process.execPath,
        join(repoRoot, "node_modules/vitest/vitest.mjs"),
        "run",
        // A user who did not install the clone cannot write vite's temporary config bundle.
        "--configLoader=runner",
        "--project",
        "api",
        "packages/api/src/documentation.test.ts",
      ],
      { PATH: farm, HOME: "/tmp", CI: "true" },
    );
    expect(code).not.toBe(0);
    expect(output).toContain("apt-get update && apt-get install -y --no-install-recommends chromium");
    expect(output).not.toMatch(/Tests\s+\d+ passed/);
    expect(output).not.toMatch(/documentation\.test\.ts \(\d+ tests?\)/);
  });
});

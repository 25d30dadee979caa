/**
 * The deployment files: the Dockerfile builds (when docker is usable here), or at least every
 * path it copies from the repository exists; the compose file and the systemd unit point at what
 * the packages really install.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const repoRoot = join(import.meta.dirname, "../../..");
const run = promisify(execFile);
const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");

async function dockerUsable(): Promise<boolean> {
  try {
    await run("docker", ["info"], { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

/** The repository paths of the Dockerfile's COPY instructions (not those from another stage). */
function copiedPaths(): string[] {
  const paths: string[] = [];
  for (const line of dockerfile.split("\n")) {
    const match = /^COPY\s+(?!--from)(.*)$/.exec(line.trim());
    if (!match) continue;
    const parts = match[1]!.split(/\s+/).filter((p) => !p.startsWith("--"));
    paths.push(...parts.slice(0, -1));
  }
  return paths;
}

describe("deployment files", () => {
  it(
    "the Dockerfile builds, or every path it copies exists",
    async () => {
      if (await dockerUsable()) {
        const { stderr } = await run("docker", ["build", "-t", "wap-server:test", repoRoot], {
          maxBuffer: 256 << 20,
          timeout: 30 * 60_000,
        });
        expect(stderr).not.toMatch(/ERROR/);
        return;
      }
      const paths = copiedPaths();
      expect(paths.length).toBeGreaterThan(5);
      for (const path of paths) expect(existsSync(join(repoRoot, path)), path).toBe(true);
      // Every workspace package's manifest is copied before the install (the lockfile names them all).
      const workspace = readFileSync(join(repoRoot, "pnpm-workspace.yaml"), "utf8");
      expect(workspace).toContain("packages/*");
      const packages = readdirSync(join(repoRoot, "packages")).map((name) => `packages/${name}/package.json`);
      for (const manifest of [...packages, "examples/package.json", "bench/package.json"]) {
        if (existsSync(join(repoRoot, manifest))) expect(paths).toContain(manifest);
      }
    },
    35 * 60_000,
  );

  it("runs the installed wap-server as a non-root user with a data volume and a health check", () => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, "packages/server/package.json"), "utf8"));
    const installedBin = `node_modules/@wap/server/${manifest.bin["wap-server"].replace(/^\.\//, "")}`;
    expect(dockerfile).toContain(installedBin);
    expect(dockerfile).toMatch(/^USER wap$/m);
    expect(dockerfile).toMatch(/^VOLUME \["\/var\/lib\/wap"\]$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    const unit = readFileSync(join(repoRoot, "deploy/wap-server.service"), "utf8");
    // The command by name: systemd finds it where `npm install -g` or the Debian package put it.
    expect(unit).toMatch(/^ExecStart=wap-server$/m);
    expect(unit).toMatch(/^EnvironmentFile=-\/etc\/default\/wap-server$/m);
    expect(unit).toMatch(/^User=wap$/m);
    expect(unit).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    const compose = readFileSync(join(repoRoot, "deploy/compose.yaml"), "utf8");
    expect(compose).toContain("dockerfile: Dockerfile");
    expect(compose).toMatch(/image: postgres:15/);
    expect(compose).toMatch(/^ {2}wap-1:$/m);
    expect(compose).toMatch(/^ {2}wap-2:$/m);
  });
});

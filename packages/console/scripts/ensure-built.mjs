#!/usr/bin/env node
/**
 * Builds the console when its build is missing or older than its sources, so that `pnpm start`
 * from a fresh clone serves it. Quiet when the build is current; writes only to stderr, because
 * `pnpm --silent start master-key` is read by scripts.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const sources = [
  join(root, "src"),
  join(root, "index.html"),
  join(root, "public"),
  join(root, "vite.config.ts"),
  join(root, "package.json"),
  join(root, "..", "api", "src"),
  join(root, "..", "client", "src"),
];

function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

let built = 0;
try {
  built = statSync(join(root, "dist", "index.html")).mtimeMs;
} catch {
  // Never built.
}
if (built === 0 || sources.some((source) => newest(source) > built)) {
  process.stderr.write("building the web console (packages/console)…\n");
  const result = spawnSync("pnpm", ["exec", "vite", "build", "--logLevel", "error"], {
    cwd: root,
    stdio: ["ignore", 2, 2],
    // A test runner's NODE_ENV=test would otherwise make Vite bundle React's development build.
    env: { ...process.env, NODE_ENV: "production" },
  });
  if (result.status !== 0) {
    process.stderr.write("the console build failed; the server starts without it\n");
  }
}

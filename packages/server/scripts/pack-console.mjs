#!/usr/bin/env node
/**
 * The web console ships inside @wap/server, so that the installed `wap-server` serves it as the
 * repository's does. `prepack` (`copy`) builds the console when its build is missing or stale and
 * copies it to ./console, which the package's `files` include; `postpack` (`remove`) deletes the
 * copy again, so that the repository keeps serving the console's own, current build.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const serverRoot = dirname(dirname(fileURLToPath(import.meta.url)));
const consoleRoot = join(serverRoot, "..", "console");
const build = join(consoleRoot, "dist");
const copy = join(serverRoot, "console");

rmSync(copy, { recursive: true, force: true });
if (process.argv[2] === "copy") {
  spawnSync(process.execPath, [join(consoleRoot, "scripts", "ensure-built.mjs")], { stdio: "inherit" });
  if (!existsSync(join(build, "index.html"))) {
    process.stderr.write(`no console build in ${build}: the package would serve no console\n`);
    process.exit(1);
  }
  cpSync(build, copy, { recursive: true });
}

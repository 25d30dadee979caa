/**
 * `pnpm release [--out <dir>]`: the installable release, in one folder (default `release/`).
 *
 *     wap-agent-<v>.tgz  wap-cli-<v>.tgz  wap-server-<v>.tgz     npm install -g <file>, offline
 *     wap-agent_<v>_<arch>.deb  wap_<v>_all.deb  wap-server_<v>_<arch>.deb     dpkg -i <file>
 *     SHA256SUMS
 *
 * Each npm tarball is self-contained: its workspace packages and npm dependencies are inside
 * (`bundleDependencies`), so installing it reaches no registry and compiles nothing. Native
 * addons (the server's SQLite and PKCS#11, the agent's pty) are the ones this machine's install
 * built or fetched: the agent's and the server's packages are for this machine's platform, and
 * the server's for its Node major version too. The Debian packages hold the same trees under
 * /usr/lib/<package>, with their systemd units and defaults from deploy/debian/; the agent's and
 * the CLI's run on Debian's nodejs (18.19 and later), the server's on the Node.js it carries. The server's
 * packages carry the agent's and the CLI's (its `release/` folder), which it serves at /install/.
 *
 * Packages whose dist/ is older than their sources are built first (the console too).
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";

const repoRoot = join(import.meta.dirname, "..");
const debianDir = join(repoRoot, "deploy", "debian");

interface App {
  /** The folder under packages/. */
  readonly dir: string;
  /** The Debian package's name. */
  readonly deb: string;
  readonly bin: string;
  readonly summary: string;
  /** Built only for this machine's architecture (native addons inside). */
  readonly native: boolean;
  /** Its systemd unit and the settings the unit reads (/etc/default/<deb>), from the repository. */
  readonly unit?: string;
  readonly defaults?: string;
}

const apps = {
  agent: {
    dir: "agent",
    deb: "wap-agent",
    bin: "wap-agent",
    summary: "Workspace Access Platform host agent (wap-agent)",
    native: true,
    unit: "packages/agent/wap-agent.service",
    defaults: "deploy/wap-agent.env.example",
  },
  cli: {
    dir: "cli",
    deb: "wap",
    bin: "wap",
    summary: "Workspace Access Platform command line (wap)",
    native: false,
  },
  server: {
    dir: "server",
    deb: "wap-server",
    bin: "wap-server",
    summary: "Workspace Access Platform server (wap-server)",
    native: true,
    unit: "deploy/wap-server.service",
    defaults: "deploy/wap-server.env.example",
  },
} as const satisfies Record<string, App>;

/** What the apps are built from: each is rebuilt when its dist/ is older than its sources. */
const builtPackages = [
  "api",
  "ssh-wire",
  "audit-chain",
  "client",
  "core",
  "storage-sql",
  "storage-sqlite",
  "storage-postgres",
  "server",
  "agent",
  "cli",
];

interface Manifest {
  name: string;
  version: string;
  description?: string;
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [key: string]: unknown;
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;
}

function run(command: string, args: readonly string[], cwd = repoRoot): void {
  execFileSync(command, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
}

/** Whether `dir`'s dist/ is at least as new as everything it is built from. */
function builtFromCurrentSources(dir: string): boolean {
  const built = walkTimes(join(dir, "dist"), Math.min);
  if (built === undefined) return false;
  const inputs = ["src", "package.json", "tsup.config.ts", "tsconfig.json"].map((p) => join(dir, p));
  return inputs.every((input) => (walkTimes(input, Math.max) ?? 0) <= built);
}

/** Folds the modification times of the files under `path`; undefined when there are none. */
function walkTimes(path: string, pick: (a: number, b: number) => number): number | undefined {
  if (!existsSync(path)) return undefined;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let result: number | undefined;
  for (const entry of readdirSync(path)) {
    const found = walkTimes(join(path, entry), pick);
    if (found !== undefined) result = result === undefined ? found : pick(result, found);
  }
  return result;
}

function buildStale(): void {
  const stale = builtPackages.filter((name) => !builtFromCurrentSources(join(repoRoot, "packages", name)));
  if (stale.length > 0) {
    // Unsorted, as `pnpm build`: the private test kit makes the dev dependency graph a cycle.
    const filters = stale.flatMap((p) => ["--filter", `./packages/${p}`]);
    run("pnpm", ["-r", "--no-sort", ...filters, "run", "build"]);
  }
  run(process.execPath, [join(repoRoot, "packages", "console", "scripts", "ensure-built.mjs")]);
}

/**
 * The app's production tree as npm would lay it out: pnpm's `deploy` with hoisted node_modules
 * (real folders, workspace packages copied as they would be published), minus pnpm's own files
 * and whatever only optional peers reached (core's test-suite peers).
 */
function stage(app: App, into: string): Manifest {
  rmSync(into, { recursive: true, force: true });
  // Without install scripts: native addons come from this repository's own install (below),
  // never compiled again here.
  run("pnpm", [
    "--filter",
    `./packages/${app.dir}`,
    "--config.node-linker=hoisted",
    "deploy",
    "--prod",
    "--ignore-scripts",
    into,
  ]);
  for (const file of ["pnpm-lock.yaml", "pnpm-workspace.yaml", ".npmrc"])
    rmSync(join(into, file), { force: true });
  const modules = join(into, "node_modules");
  for (const entry of [".pnpm", ".bin", ".modules.yaml", ".pnpm-workspace-state-v1.json"]) {
    rmSync(join(modules, entry), { recursive: true, force: true });
  }
  const manifest = readManifest(into);
  pruneUnreachable(into, manifest);
  copyWorkspaceAddons(modules);
  pruneBuildLeftovers(modules);
  return manifest;
}

/**
 * Each native addon as this repository's install built it (`npm_config_nodedir=/usr pnpm
 * install`, what the tests run on): the same package at the same version, from pnpm's virtual
 * store, its `build/Release/*.node` copied in.
 */
function copyWorkspaceAddons(modules: string): void {
  const store = join(repoRoot, "node_modules", ".pnpm");
  for (const pkg of packageDirs(modules)) {
    if (!existsSync(join(pkg, "binding.gyp"))) continue;
    const { name, version } = readManifest(pkg);
    const prefix = `${name.replace("/", "+")}@${version}`;
    const built = readdirSync(store)
      .filter((entry) => entry === prefix || entry.startsWith(`${prefix}_`))
      .map((entry) => join(store, entry, "node_modules", name, "build", "Release"))
      .find((dir) => existsSync(dir) && readdirSync(dir).some((file) => file.endsWith(".node")));
    if (built === undefined) {
      throw new Error(
        `${name}@${version} is not built in this checkout: run npm_config_nodedir=/usr pnpm install`,
      );
    }
    const release = join(pkg, "build", "Release");
    mkdirSync(release, { recursive: true });
    for (const file of readdirSync(built)) {
      if (file.endsWith(".node") && !file.startsWith("test_")) cpSync(join(built, file), join(release, file));
    }
  }
}

/** Removes every package in `root`'s node_modules that its dependencies do not reach. */
function pruneUnreachable(root: string, manifest: Manifest): void {
  const reached = new Set<string>();
  const visit = (from: string, deps: Manifest) => {
    const names = [
      ...Object.keys(deps.dependencies ?? {}),
      ...Object.keys(deps.optionalDependencies ?? {}),
      ...Object.keys(deps.peerDependencies ?? {}).filter((n) => !deps.peerDependenciesMeta?.[n]?.optional),
    ];
    for (const name of names) {
      const dir = resolvePackage(root, from, name);
      if (dir === undefined || reached.has(dir)) continue;
      reached.add(dir);
      visit(dir, readManifest(dir));
    }
  };
  visit(root, manifest);
  const removeUnreached = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      const scoped = entry.startsWith("@");
      for (const name of scoped ? readdirSync(join(modules, entry)) : [entry]) {
        const dir = scoped ? join(modules, entry, name) : join(modules, name);
        if (!reached.has(dir)) rmSync(dir, { recursive: true, force: true });
        else removeUnreached(join(dir, "node_modules"));
      }
      if (scoped && readdirSync(join(modules, entry)).length === 0)
        rmSync(join(modules, entry), { recursive: true });
    }
  };
  removeUnreached(join(root, "node_modules"));
}

/** Node's lookup: node_modules/<name> in `from`, then in each folder above it up to `root`. */
function resolvePackage(root: string, from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === root || !dir.startsWith(root)) return undefined;
  }
}

/**
 * Native addons keep only their loadable `.node` files: the compiler's intermediates and the
 * sources they were compiled from (SQLite's alone is 9 MB) are not needed to run.
 */
function pruneBuildLeftovers(modules: string): void {
  for (const pkg of packageDirs(modules)) {
    if (!existsSync(join(pkg, "binding.gyp"))) continue;
    if (!existsSync(join(pkg, "build", "Release")))
      throw new Error(`${pkg}: a native addon that was never built`);
    for (const entry of ["deps", "src", "build/Release/obj.target", "build/Release/.deps", "build/deps"]) {
      rmSync(join(pkg, entry), { recursive: true, force: true });
    }
    const release = join(pkg, "build", "Release");
    if (existsSync(release)) {
      for (const file of readdirSync(release)) {
        if (!file.endsWith(".node") || file.startsWith("test_"))
          rmSync(join(release, file), { recursive: true });
      }
    }
    const build = join(pkg, "build");
    if (existsSync(build)) {
      for (const file of readdirSync(build))
        if (file !== "Release") rmSync(join(build, file), { recursive: true });
    }
  }
}

function* packageDirs(modules: string): Generator<string> {
  if (!existsSync(modules)) return;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith(".")) continue;
    const names = entry.startsWith("@")
      ? readdirSync(join(modules, entry)).map((n) => join(entry, n))
      : [entry];
    for (const name of names) {
      yield join(modules, name);
      yield* packageDirs(join(modules, name, "node_modules"));
    }
  }
}

/**
 * The staged package.json as installed from the tarball: workspace packages named by version,
 * every dependency bundled, no build scripts and no `dev-source` condition (its files are not in).
 */
function finishManifest(dir: string, manifest: Manifest): void {
  const versions = (deps: Record<string, string> = {}) =>
    Object.fromEntries(
      Object.entries(deps).map(([name, spec]) => [
        name,
        spec.includes("file:") ? readManifest(join(dir, "node_modules", name)).version : spec,
      ]),
    );
  const dependencies = versions(manifest.dependencies);
  const exports = Object.fromEntries(
    Object.entries(manifest.exports ?? {}).map(([path, conditions]) => [
      path,
      Object.fromEntries(
        Object.entries(conditions as Record<string, unknown>).filter(([c]) => c !== "dev-source"),
      ),
    ]),
  );
  const { scripts: _s, devDependencies: _d, optionalDependencies: _o, ...rest } = manifest;
  const finished: Manifest = {
    ...rest,
    exports,
    dependencies,
    bundleDependencies: Object.keys(dependencies),
  };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(finished, null, 2)}\n`);
  for (const pkg of packageDirs(join(dir, "node_modules"))) {
    const inner = readManifest(pkg);
    let changed = false;
    // A native addon is in the bundle already built: npm would otherwise build it again at
    // install (binding.gyp alone makes it run node-gyp), which needs a compiler and the network.
    if (existsSync(join(pkg, "binding.gyp"))) {
      rmSync(join(pkg, "binding.gyp"));
      const scripts = (inner.scripts ?? {}) as Record<string, string>;
      for (const hook of ["preinstall", "install", "postinstall"]) delete scripts[hook];
      inner.gypfile = false;
      changed = true;
    }
    for (const conditions of Object.values(inner.exports ?? {})) {
      if (conditions && typeof conditions === "object" && "dev-source" in conditions) {
        delete (conditions as Record<string, unknown>)["dev-source"];
        changed = true;
      }
    }
    if (changed) writeFileSync(join(pkg, "package.json"), `${JSON.stringify(inner, null, 2)}\n`);
  }
}

/**
 * An npm tarball of `dir` (package/ inside, as `npm pack` makes). tar rather than `npm pack`:
 * pnpm's store hard-links identical files, which npm's packer fails on and its installer skips,
 * so the links are written as files.
 */
function tarball(dir: string, file: string): void {
  run("tar", [
    "--create",
    "--gzip",
    "--hard-dereference",
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mtime=@0",
    "--transform=s,^\\.,package,",
    `--file=${file}`,
    "-C",
    dir,
    ".",
  ]);
}

function debArchitecture(app: App): string {
  if (!app.native) return "all";
  return execFileSync("dpkg", ["--print-architecture"], { encoding: "utf8" }).trim();
}

/** The Debian package: the staged tree in /usr/lib/<name>, the command in /usr/bin, the rest from deploy/debian/<name>/. */
function debian(app: App, staged: string, version: string, workDir: string, out: string): string {
  const root = join(workDir, `deb-${app.deb}`);
  rmSync(root, { recursive: true, force: true });
  const libDir = join(root, "usr", "lib", app.deb);
  cpSync(staged, libDir, { recursive: true });
  const manifest = readManifest(staged);
  const binTarget = manifest.bin?.[app.bin];
  if (binTarget === undefined) throw new Error(`${manifest.name} has no bin ${app.bin}`);
  chmodSync(join(libDir, binTarget), 0o755);
  mkdirSync(join(root, "usr", "bin"), { recursive: true });
  if (app.dir === "server") bundledNode(libDir, binTarget, root);
  else
    symlinkSync(
      relative(join(root, "usr", "bin"), join(libDir, binTarget)),
      join(root, "usr", "bin", app.bin),
    );

  const control = join(root, "DEBIAN");
  mkdirSync(control, { recursive: true });
  // Maintainer scripts: the system user, systemd's reload, stopping on removal.
  const scripts = join(debianDir, app.deb);
  for (const entry of existsSync(scripts) ? readdirSync(scripts) : []) {
    cpSync(join(scripts, entry), join(control, entry));
    chmodSync(join(control, entry), 0o755);
  }
  if (app.unit !== undefined) {
    const units = join(root, "lib", "systemd", "system");
    mkdirSync(units, { recursive: true });
    cpSync(join(repoRoot, app.unit), join(units, `${app.deb}.service`));
  }
  const conffiles: string[] = [];
  if (app.defaults !== undefined) {
    mkdirSync(join(root, "etc", "default"), { recursive: true });
    cpSync(join(repoRoot, app.defaults), join(root, "etc", "default", app.deb));
    conffiles.push(`/etc/default/${app.deb}`);
  }
  const docs = join(root, "usr", "share", "doc", app.deb);
  mkdirSync(docs, { recursive: true });
  cpSync(join(repoRoot, "LICENSE"), join(docs, "copyright"));
  for (const doc of docFiles[app.deb] ?? []) cpSync(join(repoRoot, "docs", doc), join(docs, doc));
  if (conffiles.length > 0) writeFileSync(join(control, "conffiles"), `${conffiles.join("\n")}\n`);

  const installedKb = Math.ceil(
    Number(execFileSync("du", ["-sk", "--apparent-size", root], { encoding: "utf8" }).split("\t")[0]),
  );
  const architecture = debArchitecture(app);
  writeFileSync(
    join(control, "control"),
    [
      `Package: ${app.deb}`,
      `Version: ${version}`,
      `Architecture: ${architecture}`,
      "Maintainer: Workspace Access Platform <wap@localhost>",
      `Depends: ${dependencies(app)}`,
      "Section: admin",
      "Priority: optional",
      `Installed-Size: ${installedKb}`,
      `Description: ${app.summary}`,
      ` ${manifest.description ?? ""}`,
      "",
    ].join("\n"),
  );
  const file = join(out, `${app.deb}_${version}_${architecture}.deb`);
  run("dpkg-deb", ["--root-owner-group", "-Zgzip", "--build", root, file]);
  return file;
}

/** The docs each Debian package carries (its unit's Documentation= points at them). */
const docFiles: Record<string, readonly string[]> = {
  "wap-agent": ["agent.md"],
  wap: ["cli.md"],
  "wap-server": ["deploy.md", "operations.md"],
};

/**
 * What a package needs to run. The agent and the CLI run on Debian's own nodejs from 18.19 (Debian
 * 12's). The server's native addons (SQLite, PKCS#11) are built for one Node.js ABI, which no
 * Debian release's nodejs need have: its package carries that Node.js (./bundledNode) and needs
 * only the C and C++ runtime libraries, which every Debian system has.
 */
function dependencies(app: App): string {
  return app.dir === "server" ? "libc6 (>= 2.28), libgcc-s1, libstdc++6 (>= 10)" : "nodejs (>= 18.19)";
}

/** The libraries a Node.js binary may link to and still run on any Debian from 11 on. */
const systemLibraries = /^(linux-vdso|libdl|libstdc\+\+|libm|libgcc_s|libpthread|libc|ld-linux[^.]*)\.so/;

/**
 * This build's Node.js into the server's package (/usr/lib/wap-server/bin/node), the one its
 * native addons were built for; /usr/bin/wap-server runs the server on it. Refused when that
 * binary links to more than the C and C++ runtime (a distribution's shared libnode, say).
 */
function bundledNode(libDir: string, bin: string, root: string): void {
  const linked = execFileSync("ldd", [process.execPath], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().split(/\s+/)[0] ?? "")
    .filter((name) => name !== "" && !systemLibraries.test(name.split("/").pop()!));
  if (linked.length > 0) {
    throw new Error(
      `${process.execPath} links to ${linked.join(", ")}: the server's package needs a self-contained Node.js (an official build)`,
    );
  }
  mkdirSync(join(libDir, "bin"), { recursive: true });
  cpSync(process.execPath, join(libDir, "bin", "node"));
  chmodSync(join(libDir, "bin", "node"), 0o755);
  const launcher = join(root, "usr", "bin", "wap-server");
  writeFileSync(
    launcher,
    [
      "#!/bin/sh",
      `# wap-server runs on the Node.js ${process.versions.node} of its package: its native addons are built for it.`,
      `exec /usr/lib/wap-server/bin/node /usr/lib/wap-server/${bin.replace(/^\.\//, "")} "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(launcher, 0o755);
}

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

function writeSums(dir: string): void {
  const files = readdirSync(dir)
    .filter((f) => /\.(tgz|deb)$/.test(f))
    .sort();
  writeFileSync(join(dir, "SHA256SUMS"), files.map((f) => `${sha256(join(dir, f))}  ${f}\n`).join(""));
}

function main(): void {
  const { values } = parseArgs({ options: { out: { type: "string", default: "release" } } });
  const out = resolve(repoRoot, values.out);
  mkdirSync(out, { recursive: true });
  // Only what an earlier release wrote goes: --out may name a folder that holds other things.
  for (const entry of readdirSync(out)) {
    if (/\.(tgz|deb)$/.test(entry) || entry === "SHA256SUMS" || entry === ".work") {
      rmSync(join(out, entry), { recursive: true, force: true });
    }
  }
  const work = join(out, ".work");
  buildStale();

  // The agent and the CLI first: the server's packages carry them.
  const served = join(work, "served");
  mkdirSync(served, { recursive: true });
  for (const app of [apps.agent, apps.cli, apps.server]) {
    const staged = join(work, app.dir);
    const manifest = stage(app, staged);
    finishManifest(staged, manifest);
    if (app === apps.server) {
      cpSync(join(repoRoot, "packages", "console", "dist"), join(staged, "console"), { recursive: true });
      writeSums(served);
      cpSync(served, join(staged, "release"), { recursive: true });
    }
    const npmFile = join(out, `${manifest.name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`);
    tarball(staged, npmFile);
    const debFile = debian(app, staged, manifest.version, work, out);
    if (app !== apps.server)
      for (const file of [npmFile, debFile]) cpSync(file, join(served, relative(out, file)));
    process.stdout.write(`${relative(repoRoot, npmFile)}\n${relative(repoRoot, debFile)}\n`);
  }
  rmSync(work, { recursive: true, force: true });
  writeSums(out);
  process.stdout.write(`${relative(repoRoot, join(out, "SHA256SUMS"))}\n`);
}

main();

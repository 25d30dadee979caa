/**
 * What the server hands out to the machines and people it serves, under `/install/`: the
 * release's agent and CLI packages (`pnpm release` puts them in the server's own packages), the
 * list of their SHA-256 sums (`SHA256SUMS`), and `agent.sh`, the script a host owner pipes into a
 * shell to install and enrol the agent, with this server's public URL written in.
 *
 * Anonymous and before the request edge, like the console: a machine has no credentials before
 * it is enrolled. The files are read once at start, checked against their sums (a file whose sum
 * does not match is not served), and kept in memory: no path from a request reaches the disk.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NodeHandler } from "./listener.js";

/**
 * Where the release is looked for, from this file in `src/` or `dist/` alike: the copy the
 * installed package carries (`release/`), else a `pnpm release` in the repository.
 */
const defaultReleaseDirs = [
  fileURLToPath(new URL("../release", import.meta.url)),
  fileURLToPath(new URL("../../../release", import.meta.url)),
];

/** The install script's source: beside `src/` and `dist/` in the package. */
const scriptFile = fileURLToPath(new URL("../install/agent.sh", import.meta.url));

/** The release's packages by name: `wap-agent_0.1.0_amd64.deb`, `wap-cli-0.1.0.tgz`, … */
const servedName = /^[A-Za-z0-9][A-Za-z0-9._+-]*\.(deb|tgz)$/;

const contentTypes: Readonly<Record<string, string>> = {
  deb: "application/vnd.debian.binary-package",
  tgz: "application/gzip",
};

interface InstallFile {
  readonly type: string;
  readonly body: Buffer;
  readonly cacheControl: string;
}

export interface InstallFiles {
  /** The packages served (besides SHA256SUMS and agent.sh). */
  readonly packages: readonly string[];
  /** Answers a GET or HEAD for `path`, which starts with `/install/`. */
  serve(req: Parameters<NodeHandler>[0], res: Parameters<NodeHandler>[1], path: string): void;
}

/**
 * Reads the release from `dir` (by default the first of {@link defaultReleaseDirs} with a
 * SHA256SUMS) and writes `serverUrl` into the install script. Without a release the script and
 * the sums answer 404 saying so.
 */
export async function loadInstallFiles(options: { dir?: string; serverUrl: string }): Promise<InstallFiles> {
  const files = new Map<string, InstallFile>();
  const packages: string[] = [];
  const dir = await releaseDir(options.dir);
  if (dir !== undefined) {
    const sums = await readFile(join(dir, "SHA256SUMS"));
    for (const line of sums.toString("utf8").split("\n")) {
      const match = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
      const name = match?.[2];
      if (!match || name === undefined || !servedName.test(name)) continue;
      const body = await readFile(join(dir, name)).catch(() => undefined);
      if (body === undefined || createHash("sha256").update(body).digest("hex") !== match[1]) continue;
      packages.push(name);
      files.set(name, {
        type: contentTypes[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream",
        body,
        // Each name carries its version: the same name is always the same bytes.
        cacheControl: "public, max-age=86400",
      });
    }
    const listed = packages.map((name) => {
      const body = files.get(name)!.body;
      return `${createHash("sha256").update(body).digest("hex")}  ${name}\n`;
    });
    files.set("SHA256SUMS", {
      type: "text/plain; charset=utf-8",
      body: Buffer.from(listed.join("")),
      cacheControl: "no-cache",
    });
    const script = (await readFile(scriptFile, "utf8")).replaceAll(
      "@WAP_SERVER_URL@",
      shellSafeUrl(options.serverUrl),
    );
    files.set("agent.sh", {
      type: "text/x-shellscript; charset=utf-8",
      body: Buffer.from(script),
      cacheControl: "no-cache",
    });
  }

  return {
    packages,
    serve(req, res, path) {
      const file = files.get(path.slice("/install/".length));
      const head = { "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache" };
      if (file === undefined) {
        res.writeHead(404, { ...head, "Content-Type": "text/plain; charset=utf-8" });
        res.end(
          dir === undefined
            ? "this server carries no release packages: install it from a release (pnpm release)\n"
            : "not found\n",
        );
        return;
      }
      res.writeHead(200, {
        ...head,
        "Content-Type": file.type,
        "Content-Length": String(file.body.length),
        "Cache-Control": file.cacheControl,
      });
      if (req.method === "HEAD") res.end();
      else res.end(file.body);
    },
  };
}

async function releaseDir(dir: string | undefined): Promise<string | undefined> {
  for (const candidate of dir === undefined ? defaultReleaseDirs : [dir]) {
    if ((await stat(join(candidate, "SHA256SUMS")).catch(() => undefined))?.isFile()) return candidate;
  }
  return undefined;
}

/** The URL as it goes inside the script's double quotes: nothing the shell would expand. */
function shellSafeUrl(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  if (!/^https?:\/\/[A-Za-z0-9._~:/?#[\]@!&'()*+,;=%-]+$/.test(trimmed) || /["`$\\]/.test(trimmed)) {
    throw new TypeError(`the public URL cannot be written into the install script: ${url}`);
  }
  return trimmed;
}

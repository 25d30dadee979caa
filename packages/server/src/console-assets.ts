/**
 * The web console's built files (packages/console/dist), served at `/` on the API's port for
 * every GET that is not an API path, with a history fallback to index.html so that links such as
 * `/verify-email?token=…` open the console's page. Served before the request edge: loading the
 * console spends none of the caller's rate-limit budget and needs no credentials.
 *
 * The files are read once at start into memory (a few hundred kB, gzipped once too): no path
 * from a request ever reaches the file system.
 *
 * @module
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { NodeHandler } from "./listener.js";

/**
 * Where the console's files are looked for, from this file in `src/` or `dist/` alike: its own
 * build in the repository (packages/console/dist), else the copy the published package carries
 * (`console/`, put there when the package is packed: scripts/pack-console.mjs).
 */
const defaultConsoleDirs = [
  fileURLToPath(new URL("../../console/dist", import.meta.url)),
  fileURLToPath(new URL("../console", import.meta.url)),
];

/**
 * No inline script, nothing from elsewhere, never framed. Inline styles are allowed: the terminal
 * and the recording player set them on their elements.
 */
export const consoleContentSecurityPolicy = [
  "default-src 'self'",
  // The recording player runs WebAssembly; no script runs from anywhere but our files.
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const contentTypes: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
  ".map": "application/json",
};

const compressible = new Set([".html", ".js", ".css", ".svg", ".json", ".txt", ".map"]);

interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer | undefined;
  readonly cacheControl: string;
}

export interface ConsoleAssets {
  /** How many files are served. */
  readonly fileCount: number;
  /** Answers a GET or HEAD for `path` (without its query). */
  serve(req: Parameters<NodeHandler>[0], res: Parameters<NodeHandler>[1], path: string): void;
}

/**
 * API paths: REST (`/v1/...`), Connect/gRPC procedures (`/pkg.Service/Method`), health probes,
 * the OpenAPI document.
 */
export function isApiPath(path: string): boolean {
  return (
    path === "/v1" ||
    path.startsWith("/v1/") ||
    path === "/healthz" ||
    path === "/readyz" ||
    path === "/openapi.json" ||
    /^\/[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\//.test(path)
  );
}

/**
 * Reads the built console from `dir` (by default the first of {@link defaultConsoleDirs} that
 * holds one); undefined when there is no build there (no index.html).
 */
export async function loadConsoleAssets(dir?: string): Promise<ConsoleAssets | undefined> {
  for (const candidate of dir === undefined ? defaultConsoleDirs : [dir]) {
    if ((await stat(join(candidate, "index.html")).catch(() => undefined))?.isFile()) {
      return readConsoleAssets(candidate);
    }
  }
  return undefined;
}

async function readConsoleAssets(dir: string): Promise<ConsoleAssets> {
  const assets = new Map<string, Asset>();
  for (const file of await listFiles(dir)) {
    const urlPath = `/${relative(dir, file).split(sep).join("/")}`;
    const extension = extname(file).toLowerCase();
    const body = await readFile(file);
    assets.set(urlPath, {
      type: contentTypes[extension] ?? "application/octet-stream",
      body,
      gzip: compressible.has(extension) && body.length > 512 ? gzipSync(body) : undefined,
      // Vite names everything under /assets/ by its content hash: it never changes.
      cacheControl: urlPath.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    });
  }
  const indexAsset = assets.get("/index.html")!;

  return {
    fileCount: assets.size,
    serve(req, res, path) {
      // A missing hashed asset is a 404, not the page: a stale tab must not parse HTML as script.
      const asset = assets.get(path) ?? (path.startsWith("/assets/") ? undefined : indexAsset);
      const head: Record<string, string> = {
        "Content-Security-Policy": consoleContentSecurityPolicy,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        // Console links carry tokens in their query: never hand them to another site.
        "Referrer-Policy": "no-referrer",
        Vary: "Accept-Encoding",
      };
      if (asset === undefined) {
        res.writeHead(404, {
          ...head,
          "Content-Type": "text/plain; charset=utf-8",
          "Cache-Control": "no-cache",
        });
        res.end("not found\n");
        return;
      }
      const gzip = asset.gzip !== undefined && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
      const body = gzip ? asset.gzip! : asset.body;
      head["Content-Type"] = asset.type;
      head["Cache-Control"] = asset.cacheControl;
      head["Content-Length"] = String(body.length);
      if (gzip) head["Content-Encoding"] = "gzip";
      res.writeHead(200, head);
      if (req.method === "HEAD") res.end();
      else res.end(body);
    },
  };
}

async function listFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await listFiles(path)));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

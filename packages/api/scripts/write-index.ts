/**
 * Writes `src/index.ts`: one named export for every message, enum, service and file descriptor
 * that protoc-gen-es generated under `src/gen`. Run by `pnpm generate` after `buf generate`, so the
 * package's public surface always matches the contract and names each export explicitly.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const genDir = join(root, "src", "gen");

/** Exports renamed in the index: the google.api.http extension is `httpRule` (a bare `http` reads badly). */
const renamed: Record<string, string> = { http: "httpRule" };

function generatedFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      return entry.isDirectory() ? generatedFiles(path) : entry.name.endsWith("_pb.ts") ? [path] : [];
    })
    .sort();
}

function exportsOf(source: string): { values: string[]; types: string[] } {
  const values: string[] = [];
  const types: string[] = [];
  for (const match of source.matchAll(/^export (const|enum|type) (\w+)/gm)) {
    const [, kind, name] = match;
    if (!name) continue;
    (kind === "type" ? types : values).push(name);
  }
  return { values: values.sort(), types: types.sort() };
}

function named(names: string[]): string {
  return names.map((name) => `  ${renamed[name] ? `${name} as ${renamed[name]}` : name},`).join("\n");
}

const blocks = generatedFiles(genDir).map((file) => {
  const from = `./${relative(join(root, "src"), file).replace(/\.ts$/, ".js")}`;
  const { values, types } = exportsOf(readFileSync(file, "utf8"));
  const parts: string[] = [];
  if (types.length > 0) parts.push(`export type {\n${named(types)}\n} from "${from}";`);
  if (values.length > 0) parts.push(`export {\n${named(values)}\n} from "${from}";`);
  return parts.join("\n");
});

const header = `/**
 * @wap/api: the platform.v1 contract, generated from \`proto/platform/v1\` by protoc-gen-es: every
 * message schema, enum and service descriptor, and the google.api.http annotations the REST
 * routes are compiled from. Its only runtime dependency is @bufbuild/protobuf, so it loads in
 * browsers as well as in Node.
 *
 * This file is written by \`pnpm generate\` (packages/api/scripts/write-index.ts); do not edit it.
 *
 * @module
 */
`;

const services = `export { platformServices } from "./services.js";`;

writeFileSync(join(root, "src", "index.ts"), `${header}\n${blocks.join("\n\n")}\n\n${services}\n`);

/**
 * Generates `src/gen` from the contract in `proto/`.
 *
 * The contract is published as proto3 so that every protobuf toolchain compiles it (protoc 3.15 and
 * later), with `optional` on every singular scalar and enum field: every field has explicit presence,
 * so a client can send `""`, `0` or `false` and the server tells it apart from an absent field.
 * protoc-gen-es types a proto3 `optional` field as `field?: T`, but the same field in edition 2023
 * (explicit presence by default) as `field: T` with a zero default. So the TypeScript is generated
 * from an edition-2023 rendering of the same files: identical wire format, JSON mapping and
 * presence, plain property types.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderEdition2023 } from "./proto3-presence.js";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const contractDir = join(repo, "proto", "platform", "v1");

const work = mkdtempSync(join(tmpdir(), "wap-proto-"));
try {
  const files = readdirSync(contractDir).filter((name) => name.endsWith(".proto"));
  const sources = new Map(files.map((name) => [name, readFileSync(join(contractDir, name), "utf8")]));
  const rendered = renderEdition2023(sources);
  mkdirSync(join(work, "proto", "platform", "v1"), { recursive: true });
  for (const [name, text] of rendered) writeFileSync(join(work, "proto", "platform", "v1", name), text);
  cpSync(join(repo, "proto", "third_party"), join(work, "proto", "third_party"), { recursive: true });
  cpSync(join(repo, "buf.yaml"), join(work, "buf.yaml"));
  execFileSync(join(repo, "node_modules", ".bin", "buf"), ["generate", work, "--template", "buf.gen.yaml"], {
    cwd: repo,
    stdio: "inherit",
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { presenceViolations, renderEdition2023 } from "../scripts/proto3-presence.js";

const protoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "proto");
const contractFiles = readdirSync(join(protoRoot, "platform", "v1")).filter((name) =>
  name.endsWith(".proto"),
);
const sources = new Map(
  contractFiles.map((name) => [name, readFileSync(join(protoRoot, "platform", "v1", name), "utf8")]),
);

describe("the published contract", () => {
  const out = mkdtempSync(join(tmpdir(), "wap-protoc-"));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("compiles with Debian's protoc 3.21 and grpc_python_plugin, vendored google/api included", () => {
    const version = execFileSync("/usr/bin/protoc", ["--version"], { encoding: "utf8" });
    expect(version).toMatch(/^libprotoc 3\.21\./);
    execFileSync(
      "/usr/bin/protoc",
      [
        "-I",
        ".",
        "-I",
        "third_party",
        `--python_out=${out}`,
        `--grpc_python_out=${out}`,
        "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
        ...contractFiles.map((name) => `platform/v1/${name}`),
        "google/api/annotations.proto",
        "google/api/http.proto",
      ],
      { cwd: protoRoot, stdio: ["ignore", "pipe", "pipe"] },
    );
    for (const name of contractFiles) {
      const base = name.replace(/\.proto$/, "");
      expect(existsSync(join(out, "platform", "v1", `${base}_pb2.py`))).toBe(true);
      expect(existsSync(join(out, "platform", "v1", `${base}_pb2_grpc.py`))).toBe(true);
    }
    expect(readFileSync(join(out, "platform", "v1", "certificates_pb2_grpc.py"), "utf8")).toContain(
      "/platform.v1.CertificateService/SignSSHCertificate",
    );
  });

  it("is proto3 with `optional` on every singular scalar and enum field", () => {
    for (const text of sources.values()) expect(text).toMatch(/^syntax = "proto3";$/m);
    expect(presenceViolations(sources)).toEqual([]);
  });

  it("refuses a singular scalar or enum field without `optional`, and leaves lists, maps and oneofs alone", () => {
    const file = [
      'syntax = "proto3";',
      "package x.v1;",
      "enum Kind { KIND_UNSPECIFIED = 0; }",
      "message M {",
      "  optional string a = 1;",
      "  Kind kind = 2; // no presence",
      "  repeated string list = 3;",
      "  map<string, string> labels = 4;",
      "  M child = 5;",
      "  oneof choice {",
      "    string b = 6;",
      "  }",
      "  int64 count = 7;",
      "}",
    ].join("\n");
    const bad = new Map([["x.proto", file]]);
    expect(presenceViolations(bad).map((v) => v.line)).toEqual([6, 13]);
    expect(() => renderEdition2023(bad)).toThrow(/x\.proto:6: Kind kind = 2/);

    const good = new Map([
      ["x.proto", file.replace("  Kind kind", "  optional Kind kind").replace("  int64", "  optional int64")],
    ]);
    const rendered = renderEdition2023(good).get("x.proto") ?? "";
    expect(rendered).toMatch(/^edition = "2023";$/m);
    expect(rendered).not.toContain("optional");
    expect(rendered).toContain("  oneof choice {\n    string b = 6;");
  });
});

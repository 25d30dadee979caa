import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { platformServices } from "./index.js";

const root = new URL("../../../", import.meta.url);
const readme = readFileSync(new URL("README.md", root), "utf8");

describe("the README's account of the contract", () => {
  it("states the number of services and RPCs there are", () => {
    const rpcs = platformServices.reduce((sum, service) => sum + service.methods.length, 0);
    expect(readme).toContain(`${platformServices.length} services, ${rpcs} RPCs`);
  });

  it("states the number of proto files there are", () => {
    const files = readdirSync(new URL("proto/platform/v1/", root)).filter((name) => name.endsWith(".proto"));
    expect(readme).toMatch(new RegExp(`the contract: ${files.length} files`));
  });
});

describe("the repository's files", () => {
  // Documents kept outside the repository are not there for its readers: say what is meant instead.
  const outsideDocuments = new RegExp(
    ["\\bobligations? \\d+", "\\b(CLIENTS|REFERENCE|DESIGN|STACK|STYLE)\\.md\\b", "platform-api\\.md"].join(
      "|",
    ),
    "i",
  );

  it("never refer to documents outside the repository", () => {
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
      .split("\0")
      .filter(
        (name) => /\.(ts|tsx|mjs|cjs|js|md|yaml|yml|json|proto|sh)$/.test(name) && name !== "pnpm-lock.yaml",
      );
    expect(files.length).toBeGreaterThan(100);
    const offending = files.filter((name) =>
      outsideDocuments.test(readFileSync(new URL(name, root), "utf8")),
    );
    expect(offending).toEqual([]);
  });
});

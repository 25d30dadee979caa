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

import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as api from "./index.js";

describe("platformServices", () => {
  it("names every service generated from the protos, once", () => {
    const generated = Object.values(api)
      .filter(
        (value) =>
          typeof value === "object" && value !== null && (value as { kind?: string }).kind === "service",
      )
      .map((service) => (service as { typeName: string }).typeName)
      .filter((name) => name.startsWith("platform.v1."))
      .sort();
    const listed = api.platformServices.map((service) => service.typeName);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(generated);
  });
});

describe("the contract's files as entries of their own", () => {
  it("every file of platform.v1 is exported on its own, as the same module the index re-exports", async () => {
    const dir = fileURLToPath(new URL("./gen/platform/v1/", import.meta.url));
    const files = (await readdir(dir)).filter((f) => f.endsWith("_pb.ts")).map((f) => f.slice(0, -3));
    const manifest = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as {
      exports: Record<string, Record<string, string>>;
    };
    const entries = Object.keys(manifest.exports).filter((key) => key.startsWith("./gen/"));
    expect(entries.sort()).toEqual(files.map((f) => `./gen/platform/v1/${f}`).sort());
    for (const file of files) {
      expect(manifest.exports[`./gen/platform/v1/${file}`]).toEqual({
        "dev-source": `./src/gen/platform/v1/${file}.ts`,
        types: `./dist/gen/platform/v1/${file}.d.ts`,
        import: `./dist/gen/platform/v1/${file}.js`,
      });
    }
    const own = await import("@wap/api/gen/platform/v1/certificates_pb");
    expect(own.CertificateService).toBe(api.CertificateService);
  });
});

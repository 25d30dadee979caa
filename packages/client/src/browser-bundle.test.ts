import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const entry = fileURLToPath(new URL("./index.browser.ts", import.meta.url));

describe("the browser entry", () => {
  it("bundles for a browser with no Node built-ins", async () => {
    // platform "browser" makes esbuild fail on any import of a Node built-in (node:crypto, http2...).
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      platform: "browser",
      format: "esm",
      conditions: ["dev-source", "browser"],
      logLevel: "silent",
      metafile: true,
    });
    expect(result.errors).toEqual([]);
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((path) => path.includes("connect-web"))).toBe(true);
    expect(
      inputs.filter((path) => /connect-node|^node:|signed-requests|signed-transport/.test(path)),
    ).toEqual([]);
    expect(result.outputFiles[0]?.text).toContain("createPlatformClient");
  });
});

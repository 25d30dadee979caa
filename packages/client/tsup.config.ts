import { defineConfig } from "tsup";

export default defineConfig({
  // signed-transport: the signed connection alone, for a program that builds its own few clients.
  entry: ["src/index.ts", "src/index.browser.ts", "src/signed-transport.ts"],
  format: ["esm"],
  target: "node18",
  dts: true,
  sourcemap: true,
  clean: true,
  // Workspace packages and npm dependencies stay imports; only this package's source is bundled.
  skipNodeModulesBundle: true,
});

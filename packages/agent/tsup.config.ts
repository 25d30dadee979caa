import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/bin.ts", "src/session-wrapper.ts"],
  format: ["esm"],
  target: "node18",
  dts: true,
  sourcemap: true,
  clean: true,
  // Workspace packages and npm dependencies stay imports; only this package's source is bundled.
  skipNodeModulesBundle: true,
});

import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  target: "node18",
  dts: true,
  sourcemap: true,
  clean: true,
  // No dependencies: everything here is this package's own source.
  skipNodeModulesBundle: true,
});

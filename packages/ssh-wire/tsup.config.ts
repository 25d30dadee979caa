import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/encoding.ts", "src/forms.ts", "src/extensions.ts"],
  format: ["esm"],
  target: "node18",
  dts: true,
  sourcemap: true,
  clean: true,
  // No dependencies: everything here is this package's own source.
  skipNodeModulesBundle: true,
});

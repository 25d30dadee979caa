import { defineConfig } from "tsup";

export default defineConfig({
  // The writer thread is a file of its own: a worker thread is started from a path.
  entry: ["src/index.ts", "src/writer-thread.js"],
  format: ["esm"],
  target: "node20",
  dts: { entry: "src/index.ts" },
  sourcemap: true,
  clean: true,
  // Workspace packages and npm dependencies stay imports; only this package's source is bundled.
  skipNodeModulesBundle: true,
});

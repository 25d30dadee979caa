import { defineConfig } from "tsup";

export default defineConfig({
  entry: [
    "src/index.ts",
    "src/internal.ts",
    "src/storage/index.ts",
    "src/testing/index.ts",
    "src/ssh-keys.ts",
    "src/audit-chain.ts",
  ],
  format: ["esm"],
  target: "node20",
  dts: true,
  sourcemap: true,
  clean: true,
  // Workspace packages and npm dependencies stay imports; only this package's source is bundled.
  skipNodeModulesBundle: true,
});

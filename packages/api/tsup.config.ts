import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  // Loaded by browsers (the console) as well as Node: no Node built-ins, ES2022 output.
  target: "es2022",
  platform: "neutral",
  dts: true,
  sourcemap: true,
  clean: true,
  skipNodeModulesBundle: true,
});

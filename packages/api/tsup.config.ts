import { defineConfig } from "tsup";

export default defineConfig({
  // Each file of the contract is also an entry of its own (`@wap/api/gen/platform/v1/<file>_pb`,
  // listed in package.json): a program that calls one service loads and builds only its part.
  entry: ["src/index.ts", "src/gen/platform/v1/*_pb.ts"],
  format: ["esm"],
  // Loaded by browsers (the console) as well as Node: no Node built-ins, ES2022 output.
  target: "es2022",
  platform: "neutral",
  dts: true,
  sourcemap: true,
  clean: true,
  skipNodeModulesBundle: true,
});

import { defineConfig } from "tsup";

export default defineConfig({
  // Each generated file is also an entry of its own (`@wap/api/gen/platform/v1/<file>_pb`): a
  // program that calls one service loads and builds that part of the contract only.
  entry: ["src/index.ts", "src/gen/**/*_pb.ts"],
  format: ["esm"],
  // Loaded by browsers (the console) as well as Node: no Node built-ins, ES2022 output.
  target: "es2022",
  platform: "neutral",
  dts: true,
  sourcemap: true,
  clean: true,
  skipNodeModulesBundle: true,
});

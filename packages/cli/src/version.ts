import { createRequire } from "node:module";

/** This package's version: `src/` and `dist/` both sit one level below package.json. */
export const cliVersion: string = (createRequire(import.meta.url)("../package.json") as { version: string })
  .version;

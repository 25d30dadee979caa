#!/usr/bin/env node
/**
 * `wap-server`. Run from the TypeScript sources (`node --import tsx packages/server/src/bin.ts`),
 * workspace packages are resolved to their sources (the `dev-source` export condition), so no
 * build is needed; the built `dist/bin.js` uses the built packages.
 *
 * @module
 */
import { register } from "node:module";

if (import.meta.url.endsWith(".ts")) {
  // Only imports made after this line see the condition: the command itself is loaded below.
  register(
    "data:text/javascript,export function resolve(specifier, context, next) { return next(specifier, { ...context, conditions: [...context.conditions, 'dev-source'] }); }",
  );
}

import("./last-resort.js")
  .then(({ logUnhandledRejections }) => {
    logUnhandledRejections();
    return import("./cli.js");
  })
  .then(({ main }) => main())
  .then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `wap-server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );

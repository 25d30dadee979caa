#!/usr/bin/env node
/**
 * `wap-agent`. Run from the TypeScript sources, workspace packages resolve to their sources (the
 * `dev-source` export condition); the built `dist/bin.js` uses the built packages.
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

// sshd runs `principals-check` at every certificate login: it loads nothing else.
const run =
  process.argv[2] === "principals-check"
    ? () =>
        Promise.all([import("./principals-check.js"), import("./sshd-files.js")]).then(([check, files]) =>
          check.principalsCheckMain(process.argv.slice(3), files.defaultSshdDir),
        )
    : () => import("./cli.js").then(({ main }) => main());

run().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `wap-agent: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
